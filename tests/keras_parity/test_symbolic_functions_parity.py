"""Public functions Keras builds from its ops, called on a `keras.Input` inside
a functional model (DeepLabV3+ calls `preprocess_input(model_input)`): every
application family's `preprocess_input`, the accuracy functions of
`metrics`, `utils.normalize`. Each model's outputs are compared with the same
model built with Keras 3.15.1.

Found by a sweep (every public function of activations, losses, metrics,
utils, backend, ops.* called on `keras.Input`s, by both libraries): these were
the ones Keras accepts and loopax refused with a `jnp.asarray` of a symbolic
tensor."""

import numpy as np
import pytest
from keras_reference import keras

import loopax

FAMILIES = ["convnext", "densenet", "efficientnet", "efficientnet_v2", "imagenet_utils",
            "inception_resnet_v2", "inception_v3", "mobilenet", "mobilenet_v2",
            "mobilenet_v3", "nasnet", "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19",
            "xception"]
IMAGES = np.random.default_rng(0).uniform(0, 255, (2, 5, 5, 3)).astype("float32")


def _model_of(lib, fn, *shapes):
    inputs = [lib.Input(shape) for shape in shapes]
    return lib.Model(inputs if len(inputs) > 1 else inputs[0], fn(lib)(*inputs))


def _compare(fn, data, *shapes, rtol=1e-6):
    k_model, l_model = _model_of(keras, fn, *shapes), _model_of(loopax, fn, *shapes)
    want = np.asarray(k_model(data))
    np.testing.assert_allclose(np.asarray(l_model(data)), want, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(l_model.predict(data, verbose=0), want, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
def test_preprocess_input_on_a_keras_input(family):
    _compare(lambda lib: getattr(lib.applications, family).preprocess_input, IMAGES,
             (5, 5, 3))


def test_imagenet_utils_modes_and_channels_first_on_a_keras_input():
    channels_first = np.transpose(IMAGES, (0, 3, 1, 2))
    for mode in ("caffe", "tf", "torch"):
        _compare(lambda lib: lambda x: lib.applications.imagenet_utils.preprocess_input(
            x, data_format="channels_first", mode=mode), channels_first, (3, 5, 5))


@pytest.mark.parametrize("name", ["categorical_accuracy", "top_k_categorical_accuracy"])
def test_accuracy_functions_on_keras_inputs(name):
    rng = np.random.default_rng(1)
    y_true = np.eye(6, dtype="float32")[rng.integers(0, 6, 8)]
    y_pred = rng.random((8, 6)).astype("float32")
    _compare(lambda lib: getattr(lib.metrics, name), [y_true, y_pred], (6,), (6,))


def test_binary_accuracy_on_keras_inputs():
    rng = np.random.default_rng(1)
    y_true = rng.integers(0, 2, (8, 6)).astype("float32")
    y_pred = rng.random((8, 6)).astype("float32")
    l_model = _model_of(loopax, lambda lib: lib.metrics.binary_accuracy, (6,), (6,))
    k_model = _model_of(keras, lambda lib: lib.metrics.binary_accuracy, (6,), (6,))
    # Keras 3.15.1's function keeps the last axis (the matches themselves); loopax's
    # averages it, as Keras 2 did (BinaryAccuracy's result is the same in both).
    want = np.asarray(k_model([y_true, y_pred])).mean(axis=-1)
    np.testing.assert_allclose(np.asarray(l_model([y_true, y_pred])), want, rtol=1e-6)


def test_sparse_accuracy_functions_on_keras_inputs():
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 6, (8,)).astype("float32")   # (Keras refuses (None, 1) ones)
    y_pred = rng.random((8, 6)).astype("float32")
    for name in ("sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy"):
        _compare(lambda lib: getattr(lib.metrics, name), [labels, y_pred], (), (6,))


def test_utils_normalize_on_a_keras_input():
    x = np.random.default_rng(3).normal(size=(4, 5)).astype("float32")
    _compare(lambda lib: lib.utils.normalize, x, (5,), rtol=1e-5)
    np.testing.assert_allclose(loopax.utils.normalize(x), keras.utils.normalize(x), rtol=1e-6)
