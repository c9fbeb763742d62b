"""A `LayoutMap` key that matches no variable, against Keras: Keras applies the
keys that match and trains; loopax too (same losses), warning once with the key
and the variable paths. (Eight devices: tests/distribution/test_eight_devices.py.)"""

import warnings

import jax
import numpy as np
from keras_reference import keras

import loopax

RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 4)).astype("float32")
Y = RNG.normal(size=(16, 1)).astype("float32")


def train(lib, weights):
    d = lib.distribution
    mesh = d.DeviceMesh((1, 1), ["batch", "model"], devices=jax.devices()[:1])
    layout_map = d.LayoutMap(mesh)
    layout_map["hidden/kernel"] = (None, "model")
    layout_map["conv.*kernel"] = (None, None, None, "model")   # matches nothing
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with d.ModelParallel(layout_map=layout_map, batch_dim_name="batch").scope():
            model = lib.Sequential([lib.Input((4,)), lib.layers.Dense(3, name="hidden"),
                                    lib.layers.Dense(1, name="out")])
            model.set_weights(weights)
            model.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
            history = model.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False)
            evaluated = model.evaluate(X, Y, verbose=0)
    ours = [str(w.message) for w in caught if "layout map" in str(w.message)]
    return history.history["loss"], evaluated, ours


def test_a_key_matching_no_variable_is_skipped_as_in_keras_with_one_warning():
    weights = [RNG.normal(size=s).astype("float32") for s in [(4, 3), (3,), (3, 1), (1,)]]
    ours_loss, ours_eval, ours_warnings = train(loopax, weights)
    theirs_loss, theirs_eval, _ = train(keras, weights)
    np.testing.assert_allclose(ours_loss, theirs_loss, rtol=1e-5)
    np.testing.assert_allclose(ours_eval, theirs_eval, rtol=1e-5)
    assert len(ours_warnings) == 1
    assert "'conv.*kernel'" in ours_warnings[0] and "'hidden/kernel'" in ours_warnings[0]
