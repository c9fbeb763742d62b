"""`EarlyStopping`: stop `fit` when a monitored quantity stops improving."""

import math

from loopax.src.api_export import export
from loopax.src.callbacks import monitor as monitor_lib
from loopax.src.callbacks import progbar
from loopax.src.callbacks.callback import Callback


@export("loopax.callbacks.EarlyStopping")
class EarlyStopping(Callback):
    """Stops training when `monitor` has not improved for `patience` epochs.

    Args:
        monitor: the logged quantity to watch (default `"val_loss"`).
        min_delta: an improvement must beat the best by more than this.
        patience: epochs without improvement before stopping.
        verbose: 1 prints when it stops and restores.
        mode: "min", "max" or "auto" (inferred from the metric / its name).
        baseline: training stops unless the quantity beats this within `patience`.
        restore_best_weights: at the end of training, put back the weights of
            the best epoch (via `model.get_weights()` / `set_weights()`).
        start_from_epoch: epochs to wait before watching (warm-up).
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        if patience < 0:
            raise ValueError(f"EarlyStopping: patience must be >= 0, got {patience}.")
        self.monitor = monitor
        self.min_delta = abs(min_delta)
        self.patience = patience
        self.verbose = verbose
        self.mode = monitor_lib.check_mode(mode, "EarlyStopping")
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self._direction = None
        self._reset()

    def _reset(self):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        if self._direction is None:
            self._direction = monitor_lib.direction(self.monitor, self.mode, self._model)
            if self._direction is None:
                raise ValueError(
                    f"EarlyStopping cannot tell whether `{self.monitor}` should go up or down; "
                    "pass mode='max' or mode='min'.")
        current = monitor_lib.monitored_value(logs, self.monitor, "EarlyStopping")
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()  # so far, the only candidate
            self.best_epoch = epoch
        self.wait += 1
        if self._improves(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improves(current, self.baseline):
                self.wait = 0  # only beating both the best and the baseline resets patience
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def get_backup_state(self):
        """What BackupAndRestore saves (the best weights as arrays)."""
        return {"wait": self.wait, "stopped_epoch": self.stopped_epoch, "best": self.best,
                "best_weights": self.best_weights, "best_epoch": self.best_epoch}

    def set_backup_state(self, state):
        self.wait, self.stopped_epoch = state["wait"], state["stopped_epoch"]
        self.best, self.best_epoch = state["best"], state["best_epoch"]
        self.best_weights = state["best_weights"]

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            progbar._write(f"Epoch {self.stopped_epoch + 1}: early stopping\n")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                progbar._write("Restoring model weights from the end of the best epoch: "
                               f"{self.best_epoch + 1}.\n")
            self.model.set_weights(self.best_weights)

    def _improves(self, value, reference):
        if reference is None:
            return not math.isnan(value)
        if self._direction == "min":
            return value + self.min_delta < reference
        return value - self.min_delta > reference
