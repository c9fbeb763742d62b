"""`ProgbarLogger`: prints `Epoch i/n` and a progress bar per epoch, evaluate and predict."""

from loopax.src.api_export import export
from loopax.src.callbacks import progbar as progbar_module
from loopax.src.callbacks.callback import Callback
from loopax.src.callbacks.logs import logs_to_host


@export("loopax.callbacks.ProgbarLogger")
class ProgbarLogger(Callback):
    """Prints training progress: a live bar in a terminal, one line per epoch otherwise.

    `params["verbose"]`: 0 silent, 1 (or "auto") the bar, 2 one line per epoch.
    The logs it shows are the trainer's running metrics, displayed as given.
    Validation inside `fit` is silent; its `val_` metrics end the epoch's line.

    It waits for the device only when it needs numbers: after the first and
    the last batch of an epoch (so its timings are the device's) and when a
    live bar is due for a redraw.
    """

    batch_hooks = "async"  # fetched only when drawn: at most 20 device syncs a second

    def __init__(self):
        super().__init__()
        self.verbose = 1
        self.epochs = 1
        self.target = None
        self.seen = 0
        self.progbar = None
        self._in_fit = False

    def set_params(self, params):
        super().set_params(params)
        verbose = params.get("verbose", 1)
        self.verbose = 1 if verbose == "auto" else verbose
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_end(self, logs=None):
        self._in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        self._start_progbar()
        if self.verbose and self.epochs > 1:
            progbar_module._write(f"Epoch {epoch + 1}/{self.epochs}\n")

    def on_train_batch_end(self, batch, logs=None):
        self._update(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize(logs)

    def on_test_begin(self, logs=None):
        if not self._in_fit:
            self._start_progbar()

    def on_test_batch_end(self, batch, logs=None):
        if not self._in_fit:
            self._update(batch, logs)

    def on_test_end(self, logs=None):
        if not self._in_fit:
            self._finalize(logs)

    def on_predict_begin(self, logs=None):
        self._start_progbar()

    def on_predict_batch_end(self, batch, logs=None):
        self._update(batch, None)  # the outputs are not metrics

    def on_predict_end(self, logs=None):
        self._finalize(None)

    def _start_progbar(self):
        self.seen = 0
        self.progbar = None
        if self.verbose:
            self.progbar = progbar_module.Progbar(
                target=self.target, verbose=self.verbose, stateless_metrics=(), unit_name="step")

    def _update(self, batch, logs):
        first = self.seen == 0
        self.seen = batch + 1  # one-indexed; jumps by k under steps_per_execution=k
        if self.progbar is None:
            return
        last = self.target is not None and self.seen >= self.target
        if logs and (first or last or self.progbar.due()):
            logs = logs_to_host(logs)  # waits for the device, so the time read next is true
        else:
            logs = None  # keep the last values; this update only counts steps
        self.progbar.update(self.seen, logs, finalize=False)

    def _finalize(self, logs):
        if self.progbar is None:
            return
        if self.progbar.target is None:
            self.progbar.target = self.seen
        # An epoch stopped early shows where it stopped.
        current = self.seen if self.seen else self.progbar.target
        self.progbar.update(current, logs, finalize=True)
        self.progbar = None
