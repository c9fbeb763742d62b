"""Files loopax wrote before variable paths became Keras's still load.

The files in tests/data/old_paths/ were written by loopax at commit e76b512, when a nested
layer's variable path left out its parents (`d3/kernel`, where Keras and loopax now say
`sequential/inner/d3/kernel`). Each is loaded into a model built by today's code, which must
predict what the old model predicted and hold the optimizer state it held (both stored in
`expected.npz` when the files were written).

Regenerate (only when the old format itself is to be replaced) with
`python tests/saving/test_old_paths_files.py write tests/data/old_paths`.
"""

import os
import sys

import numpy as np
import pytest

import loopax as keras
import loopax.tf as tf

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "data", "old_paths")
X = np.linspace(-1.0, 1.0, 6 * 4, dtype="float32").reshape(6, 4)
Y = np.linspace(0.0, 1.0, 6 * 3, dtype="float32").reshape(6, 3)


@keras.saving.register_keras_serializable(package="old_paths")
class Block(keras.layers.Layer):
    """A custom layer with two sub-layers (their paths are nested in Keras)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.inner = keras.layers.Dense(units, name="inner_dense")
        self.norm = keras.layers.BatchNormalization(name="norm")

    def call(self, inputs, training=None):
        return self.norm(self.inner(inputs), training=training)

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def sequential_model():
    """Sequential with a nested Sequential: old paths d1/..., d3/..., new ones nested."""
    keras.utils.clear_session()
    inner = keras.Sequential([keras.layers.Dense(3, name="d3")], name="inner")
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(5, name="d1"),
                             keras.layers.Dropout(0.1, name="drop"), inner], name="seq")


def functional_model():
    """Functional with a custom layer holding sub-layers and BatchNormalization stats."""
    keras.utils.clear_session()
    inputs = keras.Input((4,), name="x")
    hidden = Block(5, name="block")(inputs)
    return keras.Model(inputs, keras.layers.Dense(3, name="head")(hidden), name="func")


BUILDERS = {"sequential": sequential_model, "functional": functional_model}


def compiled(model):
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    return model


def optimizer_values(model):
    return [np.asarray(v) for v in model.optimizer.variables]


def write(directory):
    """Writes each model's .keras, .weights.h5 and tf.train.Checkpoint files."""
    os.makedirs(directory, exist_ok=True)
    expected = {}
    for name, build in BUILDERS.items():
        model = compiled(build())
        model.fit(X, Y, batch_size=3, epochs=2, verbose=0)
        expected[f"{name}/predictions"] = np.asarray(model.predict(X, verbose=0))
        for i, value in enumerate(optimizer_values(model)):
            expected[f"{name}/optimizer/{i:03d}"] = value
        expected[f"{name}/paths"] = np.array([v.path for v in model.weights])
        model.save(os.path.join(directory, f"{name}.keras"))
        model.save_weights(os.path.join(directory, f"{name}.weights.h5"))
        tf.train.Checkpoint(model=model, optimizer=model.optimizer).write(
            os.path.join(directory, f"{name}_ckpt"))
    np.savez(os.path.join(directory, "expected.npz"), **expected)


def expected(name):
    with np.load(os.path.join(DATA, "expected.npz")) as data:
        predictions = data[f"{name}/predictions"]
        optimizer = [data[k] for k in sorted(data.files) if k.startswith(f"{name}/optimizer/")]
        paths = list(data[f"{name}/paths"])
    return predictions, optimizer, paths


def assert_optimizer_state(model, saved):
    values = optimizer_values(model)
    assert len(values) == len(saved)
    for value, want in zip(values, saved):
        np.testing.assert_array_equal(value, want)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_old_keras_file_loads(name):
    predictions, optimizer, old_paths = expected(name)
    model = keras.models.load_model(os.path.join(DATA, f"{name}.keras"))
    np.testing.assert_allclose(model.predict(X, verbose=0), predictions, rtol=1e-6, atol=1e-6)
    assert_optimizer_state(model, optimizer)
    # The same weights, now under Keras's paths (each old one the end of a new one).
    new_paths = [v.path for v in model.weights]
    assert all(new.endswith(old) for new, old in zip(new_paths, old_paths))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_old_weights_file_loads(name):
    predictions, _, _ = expected(name)
    model = BUILDERS[name]()
    model.load_weights(os.path.join(DATA, f"{name}.weights.h5"))
    np.testing.assert_allclose(model.predict(X, verbose=0), predictions, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_old_checkpoint_restores(name):
    predictions, optimizer, _ = expected(name)
    model = compiled(BUILDERS[name]())
    model.optimizer.build(model.trainable_variables)
    status = tf.train.Checkpoint(model=model, optimizer=model.optimizer).restore(
        os.path.join(DATA, f"{name}_ckpt"))
    status.assert_consumed()
    np.testing.assert_allclose(model.predict(X, verbose=0), predictions, rtol=1e-6, atol=1e-6)
    assert_optimizer_state(model, optimizer)


if __name__ == "__main__" and sys.argv[1:2] == ["write"]:
    write(sys.argv[2])
