"""`ReduceLROnPlateau`: divide the learning rate when a quantity stops improving."""

import math
import warnings

import numpy as np

from loopax.src.api_export import export
from loopax.src.callbacks import monitor as monitor_lib
from loopax.src.callbacks import progbar
from loopax.src.callbacks.callback import Callback
from loopax.src.callbacks.learning_rate import get_learning_rate, set_learning_rate


@export("loopax.callbacks.ReduceLROnPlateau")
class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` after `patience` epochs without improvement.

    new_lr = max(lr * factor, min_lr). After a reduction it waits `cooldown`
    epochs before counting again. Adds `learning_rate` to the epoch's logs.

    Args:
        monitor: the logged quantity to watch (default `"val_loss"`).
        factor: 0 <= factor < 1.
        patience: epochs without improvement before reducing.
        verbose: 1 prints each reduction.
        mode: "min", "max" or "auto".
        min_delta: an improvement must beat the best by more than this.
        cooldown: epochs to skip after a reduction.
        min_lr: lower bound on the learning rate.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        super().__init__()
        if "epsilon" in kwargs:  # the old name of min_delta
            min_delta = kwargs.pop("epsilon")
            warnings.warn("ReduceLROnPlateau: `epsilon` is deprecated, use `min_delta`.",
                          stacklevel=2)
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau got unexpected arguments {sorted(kwargs)}.")
        if not 0 <= factor < 1:
            raise ValueError(f"ReduceLROnPlateau: factor must be in [0, 1), got {factor}.")
        self.monitor = monitor
        self.factor = factor
        self.patience = patience
        self.verbose = verbose
        self.mode = monitor_lib.check_mode(mode, "ReduceLROnPlateau")
        self.min_delta = min_delta
        self.cooldown = cooldown
        self.min_lr = min_lr
        self._reset()

    def _reset(self):
        self.best = None
        self.wait = 0
        self.cooldown_counter = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def get_backup_state(self):
        """What BackupAndRestore saves (the learning rate is optimizer state)."""
        return {"best": self.best, "wait": self.wait, "cooldown_counter": self.cooldown_counter}

    def set_backup_state(self, state):
        self.best, self.wait = state["best"], state["wait"]
        self.cooldown_counter = state["cooldown_counter"]

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = get_learning_rate(self.model, "ReduceLROnPlateau")
        current = monitor_lib.monitored_value(logs, self.monitor, "ReduceLROnPlateau")
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improves(current):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                self._reduce(epoch, logs["learning_rate"])

    def _reduce(self, epoch, old_lr):
        if old_lr <= np.float32(self.min_lr):
            return
        new_lr = max(old_lr * self.factor, self.min_lr)
        set_learning_rate(self.model, new_lr, "ReduceLROnPlateau")
        if self.verbose > 0:
            progbar._write(
                f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.\n")
        self.cooldown_counter = self.cooldown
        self.wait = 0

    def _improves(self, value):
        if self.best is None:
            return not math.isnan(value)
        direction = monitor_lib.direction(self.monitor, self.mode, self._model) or "min"
        if direction == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta
