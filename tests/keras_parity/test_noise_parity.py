"""Random layers against Keras: the identity at inference; in training the
same noise *structure and statistics* as Keras (the random numbers differ:
different generators), seeded through loopax's SeedGenerator.

Tolerances are ~4 standard errors of each statistic for the sample sizes used.
"""

import math

import numpy as np
import pytest
from keras_reference import keras

import loopax

rng = np.random.default_rng(3)
x3 = rng.standard_normal((16, 8, 64)).astype("float32")      # 8192 values, 1024 maps
x4 = rng.standard_normal((16, 4, 4, 64)).astype("float32")
x5 = rng.standard_normal((16, 2, 2, 2, 64)).astype("float32")

RATE = 0.3
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

DROPOUTS = [
    pytest.param("Dropout", {"rate": RATE}, x3, (), id="Dropout"),
    pytest.param("SpatialDropout1D", {"rate": RATE}, x3, (1,), id="SpatialDropout1D"),
    pytest.param("SpatialDropout2D", {"rate": RATE}, x4, (1, 2), id="SpatialDropout2D"),
    pytest.param("SpatialDropout3D", {"rate": RATE}, x5, (1, 2, 3), id="SpatialDropout3D"),
    pytest.param("SpatialDropout2D", {"rate": RATE, "data_format": "channels_first"},
                 np.moveaxis(x4, -1, 1), (2, 3), id="SpatialDropout2D-channels_first"),
]


def both(name, kwargs):
    return (getattr(keras.layers, name)(**kwargs, seed=1),
            getattr(loopax.layers, name)(**kwargs, seed=1))


def dropout_stats(out, x, shared_axes):
    """(fraction dropped, whether kept entries are x / (1 - rate), whether
    the mask is constant over `shared_axes`)."""
    out = np.asarray(out)
    dropped = out == 0
    kept_ok = np.allclose(out[~dropped], x[~dropped] / (1 - RATE), rtol=1e-6)
    shared_ok = all((dropped == np.take(dropped, [0], axis=a)).all() for a in shared_axes)
    return dropped.mean(), kept_ok, shared_ok


@pytest.mark.parametrize("name, kwargs, x, shared_axes", DROPOUTS)
def test_dropout_masks_like_keras(name, kwargs, x, shared_axes):
    keras_layer, loopax_layer = both(name, kwargs)
    np.testing.assert_array_equal(loopax_layer(x), np.asarray(keras_layer(x)))
    draws = x.size / math.prod(x.shape[a] for a in shared_axes)
    tolerance = 4 * math.sqrt(RATE * (1 - RATE) / draws)
    first = loopax_layer(x, training=True)
    for out in (keras_layer(x, training=True), first):
        fraction, kept_ok, shared_ok = dropout_stats(out, x, shared_axes)
        assert abs(fraction - RATE) < tolerance and kept_ok and shared_ok, (
            fraction, kept_ok, shared_ok)
    # Each call draws a new mask; the same seed gives the same first mask.
    assert not np.array_equal(loopax_layer(x, training=True), first)
    again = getattr(loopax.layers, name)(**kwargs, seed=1)
    np.testing.assert_array_equal(again(x, training=True), first)


def test_gaussian_noise_like_keras():
    keras_layer, loopax_layer = both("GaussianNoise", {"stddev": 0.5})
    np.testing.assert_array_equal(loopax_layer(x3), x3)
    se = 4 * 0.5 / math.sqrt(x3.size)
    for out in (keras_layer(x3, training=True), loopax_layer(x3, training=True)):
        noise = np.asarray(out) - x3
        assert abs(noise.mean()) < se and abs(noise.std() - 0.5) < se, (noise.mean(), noise.std())


def test_gaussian_dropout_like_keras():
    keras_layer, loopax_layer = both("GaussianDropout", {"rate": RATE})
    np.testing.assert_array_equal(loopax_layer(x3), x3)
    stddev = math.sqrt(RATE / (1 - RATE))
    se = 4 * stddev / math.sqrt(x3.size)
    for out in (keras_layer(x3, training=True), loopax_layer(x3, training=True)):
        factor = np.asarray(out) / x3
        assert abs(factor.mean() - 1) < se and abs(factor.std() - stddev) < 2 * se, (
            factor.mean(), factor.std())


def test_alpha_dropout_like_keras():
    """Dropped entries take one value (SELU's saturation, mapped by the affine
    correction), and a standard-normal input keeps mean 0 and variance 1."""
    keras_layer, loopax_layer = both("AlphaDropout", {"rate": RATE})
    np.testing.assert_array_equal(loopax_layer(x3), x3)
    saturation = -SELU_ALPHA * SELU_SCALE
    a = ((1 - RATE) * (1 + RATE * saturation ** 2)) ** -0.5
    dropped_value = a * saturation - a * saturation * RATE
    tolerance = 4 * math.sqrt(RATE * (1 - RATE) / x3.size)
    for out in (keras_layer(x3, training=True), loopax_layer(x3, training=True)):
        out = np.asarray(out)
        dropped = np.isclose(out, dropped_value, rtol=1e-6)
        assert abs(dropped.mean() - RATE) < tolerance
        np.testing.assert_allclose(out[~dropped], a * x3[~dropped] - a * saturation * RATE,
                                   rtol=1e-5, atol=1e-6)
        assert abs(out.mean()) < 0.05 and abs(out.var() - 1) < 0.06, (out.mean(), out.var())


@pytest.mark.parametrize("name, kwargs", [
    ("GaussianNoise", {"stddev": 0.1}), ("GaussianDropout", {"rate": 0.2}),
    ("AlphaDropout", {"rate": 0.2}), ("SpatialDropout1D", {"rate": 0.2})],
    ids=["GaussianNoise", "GaussianDropout", "AlphaDropout", "SpatialDropout1D"])
def test_noise_layers_carry_the_seed_state_through_stateless_call(name, kwargs):
    """In a stateless call the RNG state comes back advanced (as fit() needs)."""
    layer = getattr(loopax.layers, name)(**kwargs, seed=5)
    state = [v.value for v in layer.non_trainable_variables]
    out1, state1 = layer.stateless_call([], state, x3, training=True)
    out2, _ = layer.stateless_call([], state1, x3, training=True)
    again, _ = layer.stateless_call([], state, x3, training=True)
    np.testing.assert_array_equal(again, out1)
    assert not np.array_equal(out1, out2)


def test_random_flip_like_keras():
    """Each image comes back either unchanged or flipped both ways (one draw
    per image, as Keras), about half of them flipped."""
    images = rng.standard_normal((64, 3, 4, 2)).astype("float32")
    flipped = images[:, ::-1, ::-1]
    for layer in both("RandomFlip", {}):
        out = np.asarray(layer(images, training=True))
        same = (out == images).all(axis=(1, 2, 3))
        flip = (out == flipped).all(axis=(1, 2, 3))
        assert (same | flip).all() and 16 <= flip.sum() <= 48, flip.sum()
        np.testing.assert_array_equal(layer(images, training=False), images)


def test_random_crop_like_keras():
    """In training: one (height, width) window of the input for the whole batch."""
    images = rng.standard_normal((2, 9, 8, 2)).astype("float32")
    for layer in both("RandomCrop", {"height": 4, "width": 5}):
        offsets = set()
        for _ in range(6):
            out = np.asarray(layer(images, training=True))
            assert out.shape == (2, 4, 5, 2)
            found = [(t, left) for t in range(6) for left in range(4)
                     if np.array_equal(out, images[:, t:t + 4, left:left + 5])]
            assert len(found) == 1
            offsets.add(found[0])
        assert len(offsets) > 1  # a new window each call
