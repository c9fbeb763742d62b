"""Targets whose shape only broadcasts against the output, against Keras: Keras
trains on the broadcast loss, so loopax does too (same numbers), warning once
with both shapes and the likely fix."""

import warnings

import numpy as np
import pytest
from keras_reference import keras

import loopax

RNG = np.random.default_rng(0)
X = RNG.uniform(0.1, 1.0, size=(16, 4)).astype("float32")

# (output units, target width): one output value against 10 targets, and 3 output
# values against one target.
DIRECTIONS = {"narrow_output": (1, 10), "narrow_target": (3, 1)}


def train(lib, units, y, loss, weights):
    model = lib.Sequential([lib.Input((4,)), lib.layers.Dense(units, activation="sigmoid")])
    model.set_weights(weights)
    model.compile(optimizer=lib.optimizers.SGD(0.1), loss=loss)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(X, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
        evaluated = model.evaluate(X, y, verbose=0)
    ours = [w for w in caught if issubclass(w.category, UserWarning)
            and "broadcasts" in str(w.message)]
    return history.history["loss"], evaluated, model.get_weights(), ours


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("loss", ["mse", "mae", "huber", "kl_divergence", "cosine_similarity",
                                  "hinge", "categorical_hinge"])
def test_broadcast_targets_train_as_in_keras_and_warn_once(loss, direction):
    units, width = DIRECTIONS[direction]
    y = RNG.uniform(0.1, 0.9, size=(16, width)).astype("float32")
    weights = [RNG.normal(size=(4, units)).astype("float32"), np.zeros(units, "float32")]
    ours_loss, ours_eval, ours_weights, ours_warnings = train(loopax, units, y, loss, weights)
    theirs_loss, theirs_eval, theirs_weights, _ = train(keras, units, y, loss, weights)
    np.testing.assert_allclose(ours_loss, theirs_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours_eval, theirs_eval, rtol=1e-5, atol=1e-6)
    for w, k in zip(ours_weights, theirs_weights):
        np.testing.assert_allclose(w, k, rtol=1e-5, atol=1e-6)
    assert len(ours_warnings) == 1   # fit and evaluate: once per model and shapes
    message = str(ours_warnings[0].message)
    assert f"(8, {units})" in message and f"(8, {width})" in message
    assert ("Dense(10)" if direction == "narrow_output" else "sparse_categorical") in message

