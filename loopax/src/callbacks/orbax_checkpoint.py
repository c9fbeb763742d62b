"""`OrbaxCheckpoint`: numbered checkpoints of the model's state during `fit`, written by orbax.

Each checkpoint is one step of a `CheckpointStore` (the store BackupAndRestore
writes to: atomic, asynchronous, the latest `max_to_keep` kept), numbered as
Keras numbers them: the epoch (0-based) with `save_freq="epoch"`, the global
batch count (continuing from `optimizer.iterations`) with `save_freq=N`.
It holds

    arrays/weights/<key>   the weights, keyed as `save_weights` keys them
    arrays/state/<key>     the optimizer's variables and the SeedGenerator
                           states, as `model.save` keeps them
    meta/                  {"format", "version", "weights_only"} and, unless
                           `save_weights_only`, the model config (with its
                           compile config), as `model.save` writes it

`model.load_weights(directory)` reads the latest checkpoint (or the one a
`directory/<step>` path names) into a model; `loopax.saving.load_model(directory)`
builds the model from its config first. The optimizer state is restored when
the model is compiled, so `fit()` continues as the interrupted run would have.
"""

from __future__ import annotations

import os
import sys
import warnings

from loopax.src.api_export import export
from loopax.src.callbacks import monitor as monitor_lib
from loopax.src.callbacks import progbar
from loopax.src.callbacks.callback import Callback
from loopax.src.saving.checkpoint import CheckpointStore
from loopax.src.saving.checkpoint_folders import checkpoint_contents


@export("loopax.callbacks.OrbaxCheckpoint")
class OrbaxCheckpoint(Callback):
    """Saves the model's state with orbax every epoch (or every `save_freq` steps).

    Args:
        directory: the folder of the checkpoints (`directory/<step>/`); use it
            for nothing else.
        monitor: the quantity `save_best_only` compares.
        verbose: 1 prints each save.
        save_best_only: save only when `monitor` improves on the best so far.
        mode: "min", "max" or "auto".
        save_freq: "epoch" (step = the epoch, 0-based) or N: after every N
            training steps (step = the global batch count).
        initial_value_threshold: the value to beat first when `save_best_only`.
        max_to_keep: how many of the latest checkpoints to keep (None: all).
        save_on_background: write the files in a background thread; `fit`
            waits only for the hand-over. `on_train_end` and
            `wait_until_finished()` wait for the writes.
        save_weights_only: leave out the model config (the checkpoint then
            loads with `load_weights` only, not `load_model`).
    """

    def __init__(self, directory, monitor="val_loss", verbose=0, save_best_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None, max_to_keep=1,
                 save_on_background=True, save_weights_only=False):
        super().__init__()
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"OrbaxCheckpoint: unrecognized save_freq={save_freq!r}; expected "
                             "'epoch' or an integer number of training steps.")
        if max_to_keep is not None and not isinstance(max_to_keep, int):
            raise ValueError(f"OrbaxCheckpoint: max_to_keep must be an int or None (keep all), "
                             f"got {max_to_keep!r}.")
        if max_to_keep is not None and max_to_keep < 1:
            warnings.warn(f"OrbaxCheckpoint: max_to_keep={max_to_keep} keeps no checkpoint (as "
                          "in Keras, each is deleted); pass a positive number, or None to keep "
                          "all.", stacklevel=2)
        self.directory = os.fspath(directory)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.mode = monitor_lib.check_mode(mode, "OrbaxCheckpoint")
        self.save_freq = save_freq
        self.best = initial_value_threshold
        self.max_to_keep = max_to_keep
        self.save_on_background = save_on_background
        self.save_weights_only = save_weights_only
        keep = sys.maxsize if max_to_keep is None else max(max_to_keep, 1)
        self.store = CheckpointStore(self.directory, max_to_keep=keep,
                                     asynchronous=save_on_background)
        self._total_steps = 0
        self._steps_since_save = 0
        self._last_batch = None
        if save_freq != "epoch":
            self.batch_hooks = "chunked"
            self.batch_hooks_freq = max(save_freq, 1)   # Keras saves every step when < 1
            self.on_train_batch_end = self._on_train_batch_end

    def on_train_begin(self, logs=None):
        # Keras counts the steps from the optimizer's, so a second fit() continues the numbers.
        optimizer = getattr(self._model, "optimizer", None)
        built = optimizer is not None and getattr(optimizer, "built", False)
        self._total_steps = int(optimizer.iterations.value) if built else 0
        # Counted from the start of each fit(), as the trainer aligns its executions
        # (Keras carries the count over from the previous fit; see docs/keras_differences.md).
        self._steps_since_save = 0
        self._last_batch = None

    def on_epoch_begin(self, epoch, logs=None):
        self._last_batch = None   # `batch` restarts at 0

    def _on_train_batch_end(self, batch, logs=None):
        # Steps since the last call: `batch` jumps under fused executions.
        steps = batch + 1 if self._last_batch is None else batch - self._last_batch
        self._last_batch = batch
        self._total_steps += steps
        self._steps_since_save += steps
        if self._steps_since_save >= self.save_freq:
            self._steps_since_save = 0
            self._save(self._total_steps, logs, f"batch {batch}")

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, logs, f"epoch {epoch + 1}")

    def _save(self, step, logs, where):
        if self.save_best_only and not self._improved(logs, where):
            return
        if self.verbose > 0:
            progbar._write(f"\n{where.capitalize()}: saving checkpoint {step} to "
                           f"{self.directory}\n")
        if self.max_to_keep is not None and self.max_to_keep < 1:
            os.makedirs(self.directory, exist_ok=True)   # Keras's folder, left empty
            return
        arrays, meta = checkpoint_contents(self.model, self.save_weights_only)
        self.store.save(int(step), arrays, meta)

    def _improved(self, logs, where):
        current = monitor_lib.monitored_value(logs, self.monitor, "OrbaxCheckpoint")
        if current is None:
            return False
        direction = monitor_lib.direction(self.monitor, self.mode, self._model) or "min"
        better = self.best is None or (current < self.best if direction == "min"
                                       else current > self.best)
        if not better:
            if self.verbose > 0:
                progbar._write(f"\n{where.capitalize()}: {self.monitor} did not improve from "
                               f"{self.best:.5f}\n")
            return False
        self.best = current
        return True

    def wait_until_finished(self):
        """Blocks until the checkpoint being written in the background is on disk."""
        self.store.wait()

    def on_fit_interrupted(self):
        self.store.close()

    def on_train_end(self, logs=None):
        self.store.close()   # waits for the write in flight, releases the folder
