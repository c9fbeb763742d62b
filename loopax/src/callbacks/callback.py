"""`Callback`: the base class of everything `fit`, `evaluate` and `predict` notify."""

from loopax.src.api_export import export

TRAIN_BATCH_HOOKS = ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end")
TEST_BATCH_HOOKS = ("on_test_batch_begin", "on_test_batch_end")
PREDICT_BATCH_HOOKS = ("on_predict_batch_begin", "on_predict_batch_end")
HOOKS = (
    "on_epoch_begin", "on_epoch_end",
    "on_train_begin", "on_train_end",
    "on_test_begin", "on_test_end",
    "on_predict_begin", "on_predict_end",
) + TRAIN_BATCH_HOOKS + TEST_BATCH_HOOKS + PREDICT_BATCH_HOOKS


@export("loopax.callbacks.Callback")
class Callback:
    """Base class for callbacks: override the hooks you need.

    `self.model` is the model being trained (it holds the current weights
    when read), `self.params` is `{"epochs", "steps", "verbose"}`.
    Every `logs` a callback receives maps names to Python floats.

    Batch hooks. By default a callback that implements a batch hook gets
    every batch, with its index and logs, exactly as with
    `steps_per_execution=1`: `fit` runs one compiled step per batch while
    it is there. A callback that can take one call per fused execution
    (`on_train_batch_begin(first_step)` before it,
    `on_train_batch_end(last_step, logs)` after it) says so with
    `batch_hooks = "chunked"` and keeps fusion on; one that acts every N
    training steps sets `batch_hooks_freq = N` and executions end at
    multiples of N. An explicit integer `steps_per_execution=k` calls every
    callback once per execution of k steps (Keras's rule). See
    docs/design.md, "How fit() decides what to fuse".

    The rest of the contract (loopax; Keras has no equivalent):

    - `self.training_run`: during `fit`, the `TrainingRun` (epoch, global steps, the
      data seed, the training state's Variables); None otherwise;
    - `get_backup_state()` / `set_backup_state(state)`: what BackupAndRestore
      saves of this callback and gives back in a resumed `fit`;
    - `runs_last = True`: this callback sees every hook after the others (a
      callback that saves their state);
    - `on_fit_interrupted()`: an exception is ending `fit` (no
      `on_train_end` follows): finish work in flight (a file being written).
    """

    # How the trainer may call this callback's batch hooks:
    #   "every":   once per batch (the default; what steps_per_execution=1 does);
    #   "chunked": once per fused execution of several steps (first and last index);
    #   "async":   chunked, and a pure logger (the progress bar, TensorBoard): it
    #              gets the logs as the device made them (maybe still computing;
    #              `logs_to_host` fetches them), never reads the model nor sets
    #              `stop_training`, so the trainer leaves the Variables stale
    #              around its hooks and never waits for it.
    batch_hooks = "every"
    # An int N: the callback acts at global training steps that are multiples
    # of N (ModelCheckpoint(save_freq=N)); executions end there, so it sees
    # those steps even when its hooks are chunked.
    batch_hooks_freq = None
    # True: every hook reaches this callback after the callbacks without it (in
    # the order given otherwise), e.g. BackupAndRestore, which saves their state.
    runs_last = False
    # The running `fit()` (a `TrainingRun`), set by `fit` while it runs.
    training_run = None

    def __init__(self):
        self.params = None
        self._model = None

    def set_params(self, params):
        """Stores the run's parameters (called by `fit`, `evaluate` and `predict`).

        Args:
            params: `{"epochs": int, "steps": int or None, "verbose": int}`.
        """
        self.params = params

    def set_model(self, model):
        """Sets the model the callback acts on (called before the run starts).

        Args:
            model: The `Model` being trained, evaluated or run.
        """
        self._model = model

    @property
    def model(self):
        """The model being run, with its Variables brought up to date before it is returned."""
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
        """Legacy alias of `on_train_batch_begin`.

        Args:
            batch: The batch's index within the epoch (with fused steps: the first step
                of the execution).
            logs: Unused (None or `{}`).
        """

    def on_batch_end(self, batch, logs=None):
        """Legacy alias of `on_train_batch_end`.

        Args:
            batch: The batch's index within the epoch (with fused steps: the last step
                of the execution).
            logs: The running loss and metrics, `{name: float}`.
        """

    def on_epoch_begin(self, epoch, logs=None):
        """Called at the start of epoch `epoch` (0-based) of `fit`.

        Args:
            epoch: The epoch's index (0-based).
            logs: Unused (None or `{}`).
        """

    def on_epoch_end(self, epoch, logs=None):
        """Called at the end of an epoch; `logs` has the epoch's metrics and `val_` ones.

        Args:
            epoch: The epoch's index (0-based).
            logs: The epoch's loss and metrics, `{name: float}`, with `val_` entries after
                validation.
        """

    def on_train_batch_begin(self, batch, logs=None):
        """Called before training batch `batch` (index within the epoch).

        Args:
            batch: The batch's index within the epoch (with fused steps: the first step
                of the execution).
            logs: Unused (None or `{}`).
        """
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        """Called after training batch `batch`; `logs` has the running metrics.

        Args:
            batch: The batch's index within the epoch (with fused steps: the last step
                of the execution).
            logs: The running loss and metrics, `{name: float}`.
        """
        self.on_batch_end(batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        """Called before evaluation batch `batch`.

        Args:
            batch: The batch's index within the epoch (with fused steps: the first step
                of the execution).
            logs: Unused (None or `{}`).
        """

    def on_test_batch_end(self, batch, logs=None):
        """Called after evaluation batch `batch`.

        Args:
            batch: The batch's index within the epoch (with fused steps: the last step
                of the execution).
            logs: The running loss and metrics, `{name: float}`.
        """

    def on_predict_batch_begin(self, batch, logs=None):
        """Called before prediction batch `batch`.

        Args:
            batch: The batch's index within the epoch (with fused steps: the first step
                of the execution).
            logs: Unused (None or `{}`).
        """

    def on_predict_batch_end(self, batch, logs=None):
        """Called after prediction batch `batch`; `logs["outputs"]` holds its outputs.

        Args:
            batch: The batch's index within the epoch (with fused steps: the last step
                of the execution).
            logs: `{"outputs": the batch's outputs}`.
        """

    def on_train_begin(self, logs=None):
        """Called once at the start of `fit`.

        Args:
            logs: Unused (None).
        """

    def on_train_end(self, logs=None):
        """Called once at the end of `fit`.

        Args:
            logs: The last epoch's logs (or None when no epoch ran).
        """

    def on_test_begin(self, logs=None):
        """Called at the start of `evaluate` (and of validation inside `fit`).

        Args:
            logs: Unused (None).
        """

    def on_test_end(self, logs=None):
        """Called at the end of `evaluate`.

        Args:
            logs: The evaluation's loss and metrics, `{name: float}`.
        """

    def on_predict_begin(self, logs=None):
        """Called at the start of `predict`.

        Args:
            logs: Unused (None).
        """

    def on_predict_end(self, logs=None):
        """Called at the end of `predict`.

        Args:
            logs: Unused (None).
        """

    def on_fit_interrupted(self):
        """Called when an exception (an error, Ctrl-C) ends `fit`; no `on_train_end`
        follows. Finish or release what is in flight (a backup being written, a
        locked folder) so that the process, or a rerun, finds it usable."""

    # ---- resuming after a crash (BackupAndRestore) ----------------------------
    def get_backup_state(self):
        """What `BackupAndRestore` saves of this callback with each backup, so that a
        resumed `fit()` continues it as if never interrupted: None (nothing, the default)
        or a structure of JSON values and arrays. Override it together with
        `set_backup_state`."""
        return None

    def set_backup_state(self, state):
        """Restores what `get_backup_state` returned, in a resumed `fit()` (after this
        callback's `on_train_begin`).

        Args:
            state: The structure `get_backup_state` returned, arrays as NumPy arrays.
        """


class TrainingRun:
    """A running `fit()`, as its callbacks see it (`callback.training_run`).

    Attributes:
        epoch: the current epoch (0-based; the first to run before the first
            `on_epoch_begin`).
        data_seed: the seed `fit` draws each epoch's shuffle from (with the epoch
            number): the same seed reads the data in the same order.
        state_variables: the groups of Variables the training step carries
            (trainable, non-trainable, optimizer, metrics, seed state, ...);
            read them through `callback.model`'s sync (they hold the current
            values once `self.model` has been read).
        resume_point: what a callback asked `fit` to resume from
            (`resume_from`), or None.
        steps_done: training steps run in the epochs before the current one (in
            `on_epoch_end`: including it); each training pass advances it, and
            the executions end where callbacks' step frequencies need it.
    """

    def __init__(self, state_variables, data_seed, epoch=0):
        self.state_variables = state_variables
        self.data_seed = data_seed
        self.epoch = epoch
        self.resume_point = None
        self.steps_done = 0

    def global_step(self, batch: int) -> int:
        """The training steps run once batch `batch` of the current epoch is done."""
        return self.steps_done + batch + 1

    def resume_from(self, point):
        """Asks `fit` to continue from `point` (called in `on_train_begin`): an
        object with `begin(adapter, run) -> (initial_epoch, data_seed)` and
        `enter_epoch(run) -> first batch` (BackupAndRestore's `ResumePoint`)."""
        self.resume_point = point


def keeps_backup_state(callback):
    """Whether `callback` has state for `BackupAndRestore` (it overrides
    `get_backup_state`)."""
    return overrides(callback, "get_backup_state")


def overrides(callback, hook):
    """Whether `callback` does something in `hook` (its class or instance replaces the no-op)."""
    if hook in vars(callback):
        return True
    return getattr(type(callback), hook) is not getattr(Callback, hook)


def implements(callback, hook):
    """Whether calling `hook` on `callback` can do anything (aliases included)."""
    if overrides(callback, hook):
        return True
    alias = {"on_train_batch_begin": "on_batch_begin", "on_train_batch_end": "on_batch_end"}.get(
        hook
    )
    return alias is not None and overrides(callback, alias)
