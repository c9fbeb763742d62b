"""`ModelCheckpoint`: save the model (or its weights) during training."""

import math
import os

from loopax.src.api_export import export
from loopax.src.callbacks import monitor as monitor_lib
from loopax.src.callbacks import progbar
from loopax.src.callbacks.callback import Callback


@export("loopax.callbacks.ModelCheckpoint")
class ModelCheckpoint(Callback):
    """Saves the model every epoch (or every `save_freq` steps), or only when it improves.

    With `save_freq=N` it saves after every N training steps, counted across
    epochs as Keras counts them. Its batch hooks take fused executions
    (`batch_hooks = "chunked"`) that end at multiples of N
    (`batch_hooks_freq`), so `fit` keeps fusing between saves and the saves
    fall on the same steps as with `steps_per_execution=1`.

    Args:
        filepath: where to save; may hold `{epoch}` (1-based), `{batch}` and logged
            names, e.g. `"ckpt/{epoch:02d}-{val_loss:.2f}.weights.h5"`.
        monitor: the quantity `save_best_only` compares.
        verbose: 1 prints each save.
        save_best_only: save only when `monitor` improves on the best so far.
        save_weights_only: call `model.save_weights(path)` instead of `model.save(path)`.
        mode: "min", "max" or "auto".
        save_freq: "epoch" or a number of training steps.
        initial_value_threshold: the value to beat first when `save_best_only`.
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__()
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(
                f"ModelCheckpoint: save_freq must be 'epoch' or a positive int, got {save_freq!r}.")
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.mode = monitor_lib.check_mode(mode, "ModelCheckpoint")
        self.save_freq = save_freq
        self.best = initial_value_threshold
        self._epoch = 0
        self._steps_since_save = 0
        self._last_batch = None
        if save_freq != "epoch":
            self.batch_hooks = "chunked"
            self.batch_hooks_freq = save_freq
            self.on_train_batch_end = self._on_train_batch_end

    def on_train_begin(self, logs=None):
        # Counted from the start of each fit(), as the trainer aligns its executions.
        self._steps_since_save = 0
        self._last_batch = None

    def get_backup_state(self):
        """What BackupAndRestore saves: the best value and the step count."""
        return {"best": self.best, "epoch": self._epoch,
                "steps_since_save": self._steps_since_save, "last_batch": self._last_batch}

    def set_backup_state(self, state):
        self.best, self._epoch = state["best"], state["epoch"]
        self._steps_since_save = state["steps_since_save"]
        self._last_batch = state["last_batch"]

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._last_batch = None   # `batch` restarts at 0

    def _on_train_batch_end(self, batch, logs=None):
        # Steps since the last call: `batch` jumps under fused executions.
        new_epoch = self._last_batch is None
        self._steps_since_save += batch + 1 if new_epoch else batch - self._last_batch
        self._last_batch = batch
        if self._steps_since_save >= self.save_freq:
            self._steps_since_save = 0
            self._save(self._epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _save(self, epoch, batch, logs):
        logs = logs or {}
        path = self._path(epoch, batch, logs)
        if self.save_best_only:
            current = monitor_lib.monitored_value(logs, self.monitor, "ModelCheckpoint")
            if current is None or not self._improves(current):
                if self.verbose > 0 and current is not None:
                    progbar._write(f"\nEpoch {epoch + 1}: {self.monitor} did not improve "
                                   f"from {self.best:.5f}\n")
                return
            if self.verbose > 0:
                before = "inf" if self.best is None else f"{self.best:.5f}"
                progbar._write(f"\nEpoch {epoch + 1}: {self.monitor} improved from {before} "
                               f"to {current:.5f}, saving model to {path}\n")
            self.best = current
        elif self.verbose > 0:
            progbar._write(f"\nEpoch {epoch + 1}: saving model to {path}\n")
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path)
        else:
            self.model.save(path)

    def _path(self, epoch, batch, logs):
        keys = {"epoch": epoch + 1, "batch": (batch or 0) + 1, **logs}
        try:
            return self.filepath.format(**keys)
        except KeyError as error:
            raise KeyError(
                f"ModelCheckpoint: filepath {self.filepath!r} names {{{error.args[0]}}}, which "
                f"is not among the available keys {sorted(keys)} (epoch, batch and the "
                f"logged metrics). Fix the name in the filepath.") from None

    def _improves(self, value):
        if math.isnan(value):
            return False
        if self.best is None:
            return True
        direction = monitor_lib.direction(self.monitor, self.mode, self._model) or "min"
        return value < self.best if direction == "min" else value > self.best
