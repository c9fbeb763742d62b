"""Activity penalties as Keras counts them: divided by the batch size, in the loss
that fit() minimizes."""

import numpy as np
import pytest
from keras_reference import keras

import loopax


def build(lib):
    lib.utils.set_random_seed(0)
    model = lib.Sequential([
        lib.Input((3,)),
        lib.layers.Dense(4, activity_regularizer=lib.regularizers.L1L2(l1=0.01, l2=0.1)),
        lib.layers.ActivityRegularization(l1=0.2, l2=0.05),
        lib.layers.Dense(1),
    ])
    model.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
    return model


@pytest.mark.parametrize("batch_size", [1, 5, 8], ids=["batch-1", "batch-5", "batch-8"])
def test_losses_and_fit_match_keras(batch_size):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3)).astype("float32")
    y = rng.normal(size=(8, 1)).astype("float32")
    reference, model = build(keras), build(loopax)
    model.set_weights(reference.get_weights())
    reference(x[:batch_size])
    model(x[:batch_size])
    np.testing.assert_allclose([float(v) for v in model.losses],
                               [float(v) for v in reference.losses], rtol=1e-5)
    expected = reference.fit(x, y, batch_size=batch_size, epochs=2, shuffle=False, verbose=0)
    got = model.fit(x, y, batch_size=batch_size, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(got.history["loss"], expected.history["loss"], rtol=1e-5)
    for a, b in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
