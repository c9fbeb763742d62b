"""`ModelCheckpoint`: save the model (or its weights) during training."""

import math
import os

from loopax.src.callbacks import monitor as monitor_lib
from loopax.src.callbacks import progbar
from loopax.src.callbacks.callback import Callback


class ModelCheckpoint(Callback):
    """Saves the model every epoch (or every `save_freq` steps), or only when it improves.

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
        self._steps_before_epoch = 0
        self._last_saved_step = 0
        self._step_in_epoch = 0
        if save_freq != "epoch":
            self.on_train_batch_end = self._on_train_batch_end

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def _on_train_batch_end(self, batch, logs=None):
        step = self._steps_before_epoch + batch + 1
        if step // self.save_freq > self._last_saved_step // self.save_freq:
            self._last_saved_step = step
            self._save(self._epoch, batch, logs)
        self._step_in_epoch = batch + 1

    def on_epoch_end(self, epoch, logs=None):
        self._steps_before_epoch += self._step_in_epoch
        self._step_in_epoch = 0
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _save(self, epoch, batch, logs):
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, batch=(batch or 0) + 1, **logs)
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

    def _improves(self, value):
        if math.isnan(value):
            return False
        if self.best is None:
            return True
        direction = monitor_lib.direction(self.monitor, self.mode, self._model) or "min"
        return value < self.best if direction == "min" else value > self.best
