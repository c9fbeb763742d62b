"""`CallbackList`: one object the trainer calls; it forwards each hook to every callback."""

from typing import NamedTuple

from loopax.src.api_export import export
from loopax.src.callbacks.callback import (
    PREDICT_BATCH_HOOKS,
    TEST_BATCH_HOOKS,
    TRAIN_BATCH_HOOKS,
    Callback,
    implements,
)
from loopax.src.callbacks.history import History
from loopax.src.callbacks.logs import logs_to_host
from loopax.src.callbacks.progbar_logger import ProgbarLogger

_BATCH_HOOKS = TRAIN_BATCH_HOOKS + TEST_BATCH_HOOKS + PREDICT_BATCH_HOOKS
_BATCH_HOOKS_MODES = ("every", "chunked", "async")


class BatchNeeds(NamedTuple):
    """What the callbacks need from the batches of one kind of pass (a
    trainer `PassKind`); the execution planner obeys it.

    every_batch: `(callback, hook)` pairs that need one call per batch;
    step_freqs: the `batch_hooks_freq` of the callbacks with batch hooks
        (executions end at their multiples);
    sync: whether a callback that may read the model implements a batch hook
        (the Variables then hold the current values around every hook).
    """
    every_batch: tuple = ()
    step_freqs: tuple = ()
    sync: bool = False

    def reason(self):
        """Why steps run one per call, naming the callbacks (None if they need not)."""
        if not self.every_batch:
            return None
        named = ", ".join(f"{type(cb).__name__}.{hook}" for cb, hook in self.every_batch)
        return (f"one step per compiled call, because {named} needs every batch. "
                "Set `batch_hooks = \"chunked\"` on a callback that can take one call per "
                "fused execution (see the Callback docstring).")


@export("loopax.callbacks.CallbackList")
class CallbackList(Callback):
    """Forwards every hook to `callbacks`, adding a `History` and a `ProgbarLogger` when asked.

    Args:
        callbacks: a Callback or a (nested) list of them.
        add_history: append a `History` unless one is already there.
        add_progbar: append a `ProgbarLogger` unless one is there (only when
            `params["verbose"] != 0`).
        model: the model the callbacks watch.
        **params: `epochs`, `steps`, `verbose`, handed to each `set_params`.

    Logs are converted to Python floats once per hook call (one device-to-host
    transfer), so callbacks always see floats. A batch hook no callback
    implements costs nothing: no call, no transfer, no wait for the device.
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None, **params):
        super().__init__()
        self.callbacks = _flatten_callbacks(callbacks)
        self._history = next((cb for cb in self.callbacks if isinstance(cb, History)), None)
        self._progbar = next((cb for cb in self.callbacks if isinstance(cb, ProgbarLogger)), None)
        if add_history and self._history is None:
            self._history = History()
            self.callbacks.append(self._history)
        if add_progbar and self._progbar is None and params.get("verbose", 1) != 0:
            self._progbar = ProgbarLogger()
            self.callbacks.append(self._progbar)
        # A callback that saves the others' state (BackupAndRestore) sees every hook
        # after them, and is handed the list.
        self.callbacks.sort(key=lambda cb: bool(cb.runs_last))
        for callback in self.callbacks:
            if hasattr(callback, "set_callback_list"):
                callback.set_callback_list(self)
        self._plan_key = None
        self.set_model(model)
        self.set_params(params)

    def set_params(self, params):
        self.params = params
        if params:
            for callback in self.callbacks:
                callback.set_params(params)

    def set_model(self, model):
        if model is None:
            return
        self._model = model
        if self._history is not None:
            model.history = self._history
        for callback in self.callbacks:
            callback.set_model(model)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", None, logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", None, logs)

    def set_run(self, run):
        """Hands the running `fit()` (a `TrainingRun`, or None once it ended) to
        every callback as `callback.training_run`."""
        self.training_run = run
        for callback in self.callbacks:
            callback.training_run = run

    def on_fit_interrupted(self):
        """An exception is ending `fit` (no `on_train_end` follows): each callback
        finishes its work in flight (e.g. a backup being written)."""
        for callback in self.callbacks:
            callback.on_fit_interrupted()

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", None, logs)

    def on_test_end(self, logs=None):
        self._call("on_test_end", None, logs)

    def on_predict_begin(self, logs=None):
        self._call("on_predict_begin", None, logs)

    def on_predict_end(self, logs=None):
        self._call("on_predict_end", None, logs)

    # -- batch-level hooks --

    def on_batch_begin(self, batch, logs=None):
        self._call_batch("on_batch_begin", batch, logs)

    def on_batch_end(self, batch, logs=None):
        self._call_batch("on_batch_end", batch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call_batch("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call_batch("on_train_batch_end", batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._call_batch("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._call_batch("on_test_batch_end", batch, logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._call_batch("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._call_batch("on_predict_batch_end", batch, logs)

    def batch_needs(self, kind):
        """The `BatchNeeds` of the batch hooks of `kind` (a trainer `PassKind`: its
        `batch_hooks` are the hooks that count)."""
        every, freqs, sync = [], [], False
        plan = self._plan()
        for hook in kind.batch_hooks:
            for callback in plan[hook]:
                mode, freq = callback.batch_hooks, callback.batch_hooks_freq
                if mode not in _BATCH_HOOKS_MODES:
                    raise ValueError(
                        f"{type(callback).__name__}.batch_hooks must be one of "
                        f"{list(_BATCH_HOOKS_MODES)}, got {mode!r}.")
                if freq is not None and not (isinstance(freq, int) and freq > 0):
                    raise ValueError(
                        f"{type(callback).__name__}.batch_hooks_freq must be None or a "
                        f"positive int (a number of training steps), got {freq!r}.")
                if mode == "every" and all(cb is not callback for cb, _ in every):
                    every.append((callback, hook))
                if freq is not None and freq not in freqs:
                    freqs.append(freq)
                sync = sync or mode != "async"
        return BatchNeeds(tuple(every), tuple(freqs), sync)

    # -- dispatch --

    def _call(self, hook, index, logs):
        logs = logs_to_host(logs)
        for callback in self.callbacks:
            method = getattr(callback, hook)
            if index is None:
                method(logs)
            else:
                method(index, logs)

    def _call_batch(self, hook, batch, logs):
        targets = self._plan()[hook]
        if not targets:
            return
        if hook in PREDICT_BATCH_HOOKS:  # the outputs stay as they are
            for callback in targets:
                getattr(callback, hook)(batch, logs if logs is not None else {})
            return
        host_logs = None
        for callback in targets:
            if callback.batch_hooks == "async":
                getattr(callback, hook)(batch, logs if logs is not None else {})
                continue
            if host_logs is None:
                host_logs = logs_to_host(logs)
            getattr(callback, hook)(batch, host_logs)

    def _plan(self):
        """hook -> the callbacks that implement it (recomputed when `callbacks` changes)."""
        key = tuple(map(id, self.callbacks))
        if key != self._plan_key:
            self._plan_cache = {hook: [cb for cb in self.callbacks if implements(cb, hook)]
                                for hook in _BATCH_HOOKS}
            self._plan_key = key
        return self._plan_cache


def _flatten_callbacks(callbacks):
    if callbacks is None:
        return []
    if isinstance(callbacks, Callback):
        return [callbacks]
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError(
            "callbacks: expected a Callback or a list of Callbacks, "
            f"got {type(callbacks).__name__}."
        )
    flat = []
    for item in callbacks:
        if isinstance(item, (list, tuple)):
            flat.extend(_flatten_callbacks(item))
        elif isinstance(item, Callback):
            flat.append(item)
        else:
            raise TypeError(
                f"callbacks: every item must be a loopax.callbacks.Callback, got {item!r} "
                f"({type(item).__name__}). Subclass Callback or wrap functions in LambdaCallback.")
    return flat

