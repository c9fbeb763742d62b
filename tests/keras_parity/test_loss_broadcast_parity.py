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



def _batches(width_after_first):
    rng = np.random.default_rng(3)
    return [(rng.uniform(0.1, 1.0, (8, 4)).astype("float32"),
             rng.uniform(0.0, 1.0, (8, 1 if i == 0 else width_after_first)).astype("float32"))
            for i in range(3)]


def _train_on_pydataset(lib, batches, weights):
    class Batches(lib.utils.PyDataset):
        def __len__(self):
            return len(batches)

        def __getitem__(self, i):
            return batches[i]

    warned_at = []

    class WhenWarned(lib.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            warned_at.append(len(ours(caught)))

    def ours(caught):
        return [w for w in caught if issubclass(w.category, UserWarning)
                and "broadcasts" in str(w.message)]

    model = lib.Sequential([lib.Input((4,)), lib.layers.Dense(1, activation="sigmoid")])
    model.set_weights(weights)
    model.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(Batches(), epochs=1, shuffle=False, verbose=0,
                            callbacks=[WhenWarned()])
    return history.history["loss"], model.get_weights(), ours(caught), warned_at


def test_pydataset_whose_later_batch_has_other_targets_trains_as_keras_and_warns_there():
    batches = _batches(3)   # batch 0: y (8, 1) as the output; batches 1, 2: y (8, 3)
    weights = [RNG.normal(size=(4, 1)).astype("float32"), np.zeros(1, "float32")]
    k_loss, k_weights, _, _ = _train_on_pydataset(keras, batches, weights)
    l_loss, l_weights, l_warnings, warned_at = _train_on_pydataset(loopax, batches, weights)
    np.testing.assert_allclose(l_loss, k_loss, rtol=1e-5)
    for ours, theirs in zip(l_weights, k_weights):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert len(l_warnings) == 1
    assert "(8, 1)" in str(l_warnings[0].message) and "(8, 3)" in str(l_warnings[0].message)
    assert warned_at == [0, 1, 1]   # raised at batch 1, where the (8, 3) targets appear
