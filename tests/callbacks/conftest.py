"""Fakes for driving callbacks by hand: a tiny model and a fit-shaped hook sequence."""

import io

import numpy as np
import pytest

from loopax.src.callbacks import progbar


class FakeOptimizer:
    def __init__(self, learning_rate=0.1):
        self.learning_rate = learning_rate
        self.iterations = 0


class FakeModel:
    """What callbacks touch: stop_training, weights, optimizer, save_weights."""

    def __init__(self, learning_rate=0.1):
        self.stop_training = False
        self.weights = [np.zeros(3, np.float32)]
        self.optimizer = FakeOptimizer(learning_rate)
        self.saved = []

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [np.array(w) for w in weights]

    def save_weights(self, path):
        self.saved.append(path)


def drive_fit(callback_list, model, epoch_logs, steps, per_execution=1, train_logs=None):
    """Calls the hooks the way fit() does: per execution of `per_execution` steps.

    `epoch_logs[e]` are the logs at the end of epoch e; `train_logs(e, step)`
    gives the running logs after `step`. Training weights get `+1` per step.
    """
    train_logs = train_logs or (lambda epoch, step: {"loss": 1.0 / (step + 1)})
    callback_list.on_train_begin()
    for epoch, logs in enumerate(epoch_logs):
        callback_list.on_epoch_begin(epoch)
        for first in range(0, steps, per_execution):
            last = min(first + per_execution, steps) - 1
            callback_list.on_train_batch_begin(first)
            model.weights = [w + (last - first + 1) for w in model.weights]
            callback_list.on_train_batch_end(last, train_logs(epoch, last))
            if model.stop_training:
                break
        callback_list.on_epoch_end(epoch, dict(logs))
        if model.stop_training:
            break
    callback_list.on_train_end()


class FakeClock:
    """Time that moves only when told to."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(progbar, "_clock", fake)
    return fake


@pytest.fixture
def terminal(monkeypatch):
    screen = FakeTerminal()
    monkeypatch.setattr(progbar, "_output", lambda: screen)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return screen


@pytest.fixture
def fake_model():
    return FakeModel()


@pytest.fixture
def make_model():
    return FakeModel


@pytest.fixture
def drive():
    return drive_fit
