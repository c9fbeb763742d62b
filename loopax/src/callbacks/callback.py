"""`Callback`: the base class of everything `fit`, `evaluate` and `predict` notify."""

TRAIN_BATCH_HOOKS = ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end")
TEST_BATCH_HOOKS = ("on_test_batch_begin", "on_test_batch_end")
PREDICT_BATCH_HOOKS = ("on_predict_batch_begin", "on_predict_batch_end")
HOOKS = (
    "on_epoch_begin", "on_epoch_end",
    "on_train_begin", "on_train_end",
    "on_test_begin", "on_test_end",
    "on_predict_begin", "on_predict_end",
) + TRAIN_BATCH_HOOKS + TEST_BATCH_HOOKS + PREDICT_BATCH_HOOKS


class Callback:
    """Base class for callbacks: override the hooks you need.

    `self.model` is the model being trained (it holds the current weights
    when read), `self.params` is `{"epochs", "steps", "verbose"}`.
    Every `logs` a callback receives maps names to Python floats.

    Under `steps_per_execution=k` the batch hooks run once per execution:
    `on_train_batch_begin(first_step)` before it and
    `on_train_batch_end(last_step, logs)` after it.
    """

    # True for pure loggers (the progress bar, TensorBoard): their batch hooks
    # never read the model or set `stop_training`, and they get the batch logs
    # as the trainer made them (maybe still being computed on the device),
    # fetching values only when they need them, so training never waits for
    # them. The trainer keeps the model's Variables stale around their hooks.
    _async_batch_hooks = False

    def __init__(self):
        self.params = None
        self._model = None

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self._model = model

    @property
    def model(self):
        # A fused trainer keeps weights outside the model between steps;
        # `jax_state_sync` (Keras's name) writes them back before a callback looks.
        sync = getattr(self._model, "jax_state_sync", None)
        if sync is not None:
            sync()
        return self._model

    @model.setter
    def model(self, model):
        self._model = model

    def on_batch_begin(self, batch, logs=None):
        """Legacy alias of `on_train_batch_begin`."""

    def on_batch_end(self, batch, logs=None):
        """Legacy alias of `on_train_batch_end`."""

    def on_epoch_begin(self, epoch, logs=None):
        """Called at the start of epoch `epoch` (0-based) of `fit`."""

    def on_epoch_end(self, epoch, logs=None):
        """Called at the end of an epoch; `logs` has the epoch's metrics and `val_` ones."""

    def on_train_batch_begin(self, batch, logs=None):
        """Called before training batch `batch` (index within the epoch)."""
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        """Called after training batch `batch`; `logs` has the running metrics."""
        self.on_batch_end(batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        """Called before evaluation batch `batch`."""

    def on_test_batch_end(self, batch, logs=None):
        """Called after evaluation batch `batch`."""

    def on_predict_batch_begin(self, batch, logs=None):
        """Called before prediction batch `batch`."""

    def on_predict_batch_end(self, batch, logs=None):
        """Called after prediction batch `batch`; `logs["outputs"]` holds its outputs."""

    def on_train_begin(self, logs=None):
        """Called once at the start of `fit`."""

    def on_train_end(self, logs=None):
        """Called once at the end of `fit`."""

    def on_test_begin(self, logs=None):
        """Called at the start of `evaluate` (and of validation inside `fit`)."""

    def on_test_end(self, logs=None):
        """Called at the end of `evaluate`."""

    def on_predict_begin(self, logs=None):
        """Called at the start of `predict`."""

    def on_predict_end(self, logs=None):
        """Called at the end of `predict`."""


def overrides(callback, hook):
    """Whether `callback` does something in `hook` (its class or instance replaces the no-op)."""
    if hook in vars(callback):
        return True
    return getattr(type(callback), hook) is not getattr(Callback, hook)


def implements(callback, hook):
    """Whether calling `hook` on `callback` can do anything (aliases included)."""
    if overrides(callback, hook):
        return True
    alias = {"on_train_batch_begin": "on_batch_begin", "on_train_batch_end": "on_batch_end"}.get(hook)
    return alias is not None and overrides(callback, alias)
