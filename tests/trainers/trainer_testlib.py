"""Tiny models and data shared by the trainer tests (few shapes: few compiles)."""

import numpy as np

import loopax as keras


def regression_data(n=64, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype("float32")
    y = (x @ rng.normal(size=(d, 1)) + 0.1 * rng.normal(size=(n, 1))).astype("float32")
    return x, y


def mlp(d=3, units=4, name=None):
    inputs = keras.Input(shape=(d,))
    h = keras.layers.Dense(units, activation="tanh")(inputs)
    outputs = keras.layers.Dense(1)(h)
    return keras.Model(inputs, outputs, name=name)


class CountRuns(keras.layers.Layer):
    """The identity, counting how often its Python `call` runs: eagerly, or once
    per trace. A compiled function that is reused does not run it again."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.runs = 0

    def call(self, x):
        self.runs += 1
        return x


def counted_mlp(d=3, units=4):
    """`mlp()` with a `CountRuns` layer after the input: (model, counter)."""
    counter = CountRuns()
    inputs = keras.Input(shape=(d,))
    h = keras.layers.Dense(units, activation="tanh")(counter(inputs))
    return keras.Model(inputs, keras.layers.Dense(1)(h)), counter


class Snapshot:
    """Model and optimizer weights to restore between runs of one compiled model."""

    def __init__(self, model):
        self.model = model
        self.weights = model.get_weights()
        self.opt = model.optimizer.get_weights()

    def restore(self):
        self.model.set_weights(self.weights)
        self.model.optimizer.set_weights(self.opt)


class Recorder(keras.callbacks.Callback):
    """Records every hook call as (hook, index)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def _log(self, hook, index=None):
        self.calls.append((hook, index) if index is not None else (hook,))

    def on_train_begin(self, logs=None): self._log("train_begin")
    def on_train_end(self, logs=None): self._log("train_end")
    def on_epoch_begin(self, epoch, logs=None): self._log("epoch_begin", epoch)
    def on_epoch_end(self, epoch, logs=None): self._log("epoch_end", epoch)
    def on_train_batch_begin(self, batch, logs=None): self._log("batch_begin", batch)
    def on_train_batch_end(self, batch, logs=None): self._log("batch_end", batch)
    def on_test_begin(self, logs=None): self._log("test_begin")
    def on_test_end(self, logs=None): self._log("test_end")
    def on_test_batch_begin(self, batch, logs=None): self._log("test_batch_begin", batch)
    def on_test_batch_end(self, batch, logs=None): self._log("test_batch_end", batch)
