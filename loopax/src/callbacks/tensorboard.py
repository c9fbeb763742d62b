"""`TensorBoard`: scalar event files TensorBoard reads, one run per `train` and `validation`."""

import importlib.util
import os
import time

import numpy as np

from loopax.src.api_export import export
from loopax.src.callbacks.callback import Callback
from loopax.src.callbacks.logs import logs_to_host


def _require_tensorboardx():
    if importlib.util.find_spec("tensorboardX") is None:
        raise ImportError(
            "The TensorBoard callback needs tensorboardX, which is not installed: "
            "pip install loopax[tensorboard]")


@export("loopax.callbacks.TensorBoard")
class TensorBoard(Callback):
    """Logs losses and metrics for TensorBoard (`tensorboard --logdir=log_dir`).

    Writes `log_dir/train` (tags `epoch_loss`, `epoch_<metric>`, `epoch_learning_rate`,
    step = epoch) and `log_dir/validation` (the `val_` values under the same tags),
    as Keras does. With `update_freq=N` (or `"batch"`, N=1) it also writes
    `batch_<name>` every N training steps, at the global step number.
    `evaluate` adds `evaluation_<name>_vs_iterations` at `optimizer.iterations`.

    Args:
        log_dir: where to write; one directory per training run is advised.
        histogram_freq: every this many epochs, a histogram of each weight (0: never).
        write_steps_per_second: also log `steps_per_second`.
        update_freq: "epoch", "batch" or an int number of steps.
    """

    batch_hooks = "async"  # batch logs are fetched only every update_freq steps

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None):
        super().__init__()
        _require_tensorboardx()
        for name, value in (("write_images", write_images), ("profile_batch", profile_batch),
                            ("embeddings_freq", embeddings_freq),
                            ("embeddings_metadata", embeddings_metadata)):
            if value:
                raise NotImplementedError(
                    f"TensorBoard: {name} is not supported by loopax; leave it at its default.")
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and not (isinstance(update_freq, int) and update_freq > 0):
            raise ValueError(
                f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive int, "
                f"got {update_freq!r}.")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph  # accepted for Keras compatibility; no graph is written
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = update_freq
        self._writers = {}
        self._in_fit = False
        self._steps_before_epoch = 0  # training steps of the finished epochs
        self._last_step = 0
        self._last_batch_write = (0, None)  # (global step, time)
        self._epoch_start = None
        if update_freq != "epoch" or write_steps_per_second:
            # Only then does it need batch logs: otherwise fit skips fetching them.
            self.on_train_batch_end = self._on_train_batch_end
        if update_freq != "epoch":
            self.batch_hooks_freq = update_freq   # fused executions end at its steps

    def set_model(self, model):
        super().set_model(model)
        self._close_writers()

    def _writer(self, run):
        if run not in self._writers:
            import tensorboardX
            self._writers[run] = tensorboardX.SummaryWriter(os.path.join(self.log_dir, run))
        return self._writers[run]

    def _close_writers(self):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def on_train_begin(self, logs=None):
        self._in_fit = True
        self._steps_before_epoch = self._last_step = 0
        self._last_batch_write = (0, time.monotonic())

    def on_train_end(self, logs=None):
        self._in_fit = False
        self._close_writers()

    def get_backup_state(self):
        """What BackupAndRestore saves: the step counters (event files stay as
        written; a resumed run appends to new ones)."""
        return {"steps_before_epoch": self._steps_before_epoch, "last_step": self._last_step,
                "last_batch_write": self._last_batch_write[0]}

    def set_backup_state(self, state):
        self._steps_before_epoch = state["steps_before_epoch"]
        self._last_step = state["last_step"]
        self._last_batch_write = (state["last_batch_write"], time.monotonic())

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = (self._last_step, time.monotonic())

    def _on_train_batch_end(self, batch, logs=None):
        step = self._steps_before_epoch + batch + 1
        self._last_step = step
        if self.update_freq == "epoch":
            return
        last_step, last_time = self._last_batch_write
        if step // self.update_freq == last_step // self.update_freq:
            return  # no multiple of update_freq crossed (steps jump under fused execution)
        writer = self._writer("train")
        for name, value in logs_to_host(logs).items():
            _add_scalar(writer, "batch_" + name, value, step)
        now = time.monotonic()
        if self.write_steps_per_second and last_time is not None and now > last_time:
            writer.add_scalar(
                "batch_steps_per_second", (step - last_step) / (now - last_time), step
            )
        self._last_batch_write = (step, now)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        validation = {k[len("val_"):]: v for k, v in logs.items() if k.startswith("val_")}
        learning_rate = self._learning_rate()
        if learning_rate is not None and "learning_rate" not in train:
            train["learning_rate"] = learning_rate
        if self.write_steps_per_second and self._epoch_start is not None:
            first_step, start = self._epoch_start
            elapsed = time.monotonic() - start
            if elapsed > 0:
                train["steps_per_second"] = (self._last_step - first_step) / elapsed
        for run, values in (("train", train), ("validation", validation)):
            if values:
                writer = self._writer(run)
                for name, value in values.items():
                    _add_scalar(writer, "epoch_" + name, value, epoch)
                writer.flush()
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_histograms(epoch)
        self._steps_before_epoch = self._last_step

    def on_test_end(self, logs=None):
        iterations = getattr(getattr(self.model, "optimizer", None), "iterations", None)
        if iterations is not None and logs:
            writer = self._writer("validation")
            step = int(np.asarray(iterations))
            for name, value in logs.items():
                _add_scalar(writer, f"evaluation_{name}_vs_iterations", value, step)
            writer.flush()
        if not self._in_fit:
            self._close_writers()

    def _learning_rate(self):
        learning_rate = getattr(getattr(self.model, "optimizer", None), "learning_rate", None)
        try:
            return None if learning_rate is None else float(np.asarray(learning_rate))
        except (TypeError, ValueError):
            return None  # a schedule, not a number

    def _write_histograms(self, epoch):
        writer = self._writer("train")
        for weight in getattr(self.model, "weights", ()):
            name = getattr(weight, "path", None) or getattr(weight, "name", "weight")
            writer.add_histogram(f"{name}/histogram", np.asarray(weight), epoch)
        writer.flush()


def _add_scalar(writer, tag, value, step):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return  # only scalars become TensorBoard scalars
    writer.add_scalar(tag, value, step)
