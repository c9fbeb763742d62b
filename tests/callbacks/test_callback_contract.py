"""The contract between `fit()` and its callbacks, declared on `Callback`: the
run object (`callback.training_run`), ordering (`runs_last`), the interruption hook and
the backup pair; BackupAndRestore uses only that contract."""

import ast
import inspect

import numpy as np
import pytest

import loopax
from loopax.callbacks import BackupAndRestore, Callback, CallbackList

ROWS, BATCH, EPOCHS = 40, 8, 2   # 5 steps per epoch


def _model():
    loopax.utils.set_random_seed(0)
    model = loopax.Sequential([loopax.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def _data():
    rng = np.random.default_rng(0)
    return rng.random((ROWS, 3), np.float32), rng.random((ROWS, 1), np.float32)


class RunWatcher(Callback):
    """Records what `self.training_run` says at each batch and epoch end."""

    def __init__(self):
        super().__init__()
        self.batches, self.epoch_ends, self.seeds = [], [], set()

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append((self.training_run.epoch, batch, self.training_run.global_step(batch)))
        self.seeds.add(self.training_run.data_seed)

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_ends.append((epoch, self.training_run.steps_done))
        groups = self.training_run.state_variables
        assert groups[0] == list(self.model.trainable_variables)


def test_callbacks_read_epoch_global_step_and_seed_from_the_run():
    watcher = RunWatcher()
    x, y = _data()
    _model().fit(x, y, batch_size=BATCH, epochs=EPOCHS, verbose=0, callbacks=[watcher])
    steps = ROWS // BATCH
    assert watcher.batches == [(e, b, e * steps + b + 1)
                               for e in range(EPOCHS) for b in range(steps)]
    assert watcher.epoch_ends == [(0, steps), (1, 2 * steps)]
    assert len(watcher.seeds) == 1 and isinstance(watcher.seeds.pop(), int)
    assert watcher.training_run is None   # only while fit() runs


class Order(Callback):
    def __init__(self, name, seen, last=False):
        super().__init__()
        self.name, self.seen, self.runs_last = name, seen, last

    def on_epoch_begin(self, epoch, logs=None):
        self.seen.append(self.name)


def test_runs_last_callbacks_see_each_hook_after_the_others():
    assert Callback.runs_last is False
    seen = []
    callbacks = CallbackList([Order("saver", seen, last=True), Order("a", seen),
                              Order("b", seen)])
    callbacks.on_epoch_begin(0)
    assert seen == ["a", "b", "saver"]


class Interrupted(Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_fit_interrupted(self):
        self.calls.append("interrupted")

    def on_train_end(self, logs=None):
        self.calls.append("train_end")


class Fails(Callback):
    def on_epoch_end(self, epoch, logs=None):
        raise RuntimeError("boom")


def test_an_exception_ending_fit_calls_on_fit_interrupted_not_on_train_end():
    watcher = Interrupted()
    x, y = _data()
    with pytest.raises(RuntimeError, match="boom"):
        _model().fit(x, y, batch_size=BATCH, epochs=EPOCHS, verbose=0,
                     callbacks=[watcher, Fails()])
    assert watcher.calls == ["interrupted"]
    assert watcher.training_run is None


def test_backup_and_restore_uses_only_the_callback_contract():
    """No import of the trainer's modules, no private model attribute."""
    source = inspect.getsource(inspect.getmodule(BackupAndRestore))
    imported = [node.module for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.ImportFrom)]
    assert not [name for name in imported if name.startswith("loopax.src.trainers")]
    assert "_trainer_state" not in source and "__dict__" not in source
