"""`class_weight` that lacks a class present in the labels, against Keras: those
samples weigh 1.0 as in Keras, and loopax warns once naming the class."""

import warnings

import numpy as np
from keras_reference import keras

import loopax

RNG = np.random.default_rng(0)
X = RNG.normal(size=(24, 4)).astype("float32")
Y = np.arange(24, dtype="int32") % 3          # classes 0, 1, 2
CLASS_WEIGHT = {0: 0.5, 2: 3.0}               # no weight for class 1


def fit(lib, weights):
    model = lib.Sequential([lib.Input((4,)), lib.layers.Dense(3)])
    model.set_weights(weights)
    model.compile(optimizer=lib.optimizers.SGD(0.1),
                  loss=lib.losses.SparseCategoricalCrossentropy(from_logits=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(X, Y, epochs=2, batch_size=8, shuffle=False, verbose=0,
                            class_weight=CLASS_WEIGHT)
        trained = [np.asarray(w) for w in model.get_weights()]
        model.fit(X, Y, epochs=1, batch_size=8, verbose=0, class_weight=CLASS_WEIGHT)
    ours = [str(w.message) for w in caught if "class_weight" in str(w.message)]
    return history.history["loss"], trained, ours


def test_a_class_missing_from_class_weight_weighs_one_as_in_keras_with_a_warning():
    weights = [RNG.normal(size=(4, 3)).astype("float32"), np.zeros(3, "float32")]
    ours_loss, ours_weights, ours_warnings = fit(loopax, weights)
    theirs_loss, theirs_weights, _ = fit(keras, weights)
    np.testing.assert_allclose(ours_loss, theirs_loss, rtol=1e-5)
    for w, k in zip(ours_weights, theirs_weights):
        np.testing.assert_allclose(w, k, rtol=1e-5, atol=1e-6)
    assert len(ours_warnings) == 1                  # two fits, one warning
    assert "class 1," in ours_warnings[0] and "1: <weight>" in ours_warnings[0]
