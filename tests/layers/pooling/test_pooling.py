"""Pooling layers against NumPy loops (outputs) and a slice-based JAX
reference (gradients)."""

import math

import jax.numpy as jnp
import numpy as np
import pytest
from layer_checks import assert_trees_close, grads_through_stateless_call, reference_grads

import loopax
from loopax import layers

rng = np.random.default_rng(2)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def numpy_pool2d(x, pool, strides, reduce, same=False):
    """Channels-last 2-D pooling; "same" pads with nothing (windows shrink)."""
    b, h, w, c = x.shape
    if same:
        oh, ow = math.ceil(h / strides[0]), math.ceil(w / strides[1])
        ph = max((oh - 1) * strides[0] + pool[0] - h, 0) // 2
        pw = max((ow - 1) * strides[1] + pool[1] - w, 0) // 2
    else:
        oh, ow = (h - pool[0]) // strides[0] + 1, (w - pool[1]) // strides[1] + 1
        ph = pw = 0
    out = np.zeros((b, oh, ow, c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - ph, j * strides[1] - pw
            win = x[:, max(r0, 0):r0 + pool[0], max(c0, 0):c0 + pool[1]]
            out[:, i, j] = reduce(win, axis=(1, 2))
    return out


def test_max_pooling2d_valid_and_same():
    x = randn(2, 5, 5, 3)
    np.testing.assert_allclose(layers.MaxPooling2D()(x), numpy_pool2d(x, (2, 2), (2, 2), np.max))
    np.testing.assert_allclose(layers.MaxPooling2D(3, strides=2, padding="same")(x),
                               numpy_pool2d(x, (3, 3), (2, 2), np.max, same=True))


def test_average_pooling2d_same_averages_only_real_entries():
    x = randn(2, 5, 5, 3)
    np.testing.assert_allclose(layers.AveragePooling2D((2, 3), strides=1)(x),
                               numpy_pool2d(x, (2, 3), (1, 1), np.mean), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layers.AveragePooling2D(2, padding="same")(x),
                               numpy_pool2d(x, (2, 2), (2, 2), np.mean, same=True),
                               rtol=1e-5, atol=1e-6)


def test_pooling1d():
    x = randn(2, 7, 3)
    want_max = np.stack([x[:, 2 * i:2 * i + 2].max(1) for i in range(3)], 1)
    want_avg = np.stack([x[:, 2 * i:2 * i + 3].mean(1) for i in range(3)], 1)
    np.testing.assert_allclose(layers.MaxPooling1D()(x), want_max)
    np.testing.assert_allclose(layers.AveragePooling1D(3, strides=2)(x), want_avg, rtol=1e-5)


def test_pooling_channels_first():
    x = randn(1, 4, 4, 2)
    y = layers.MaxPooling2D(data_format="channels_first")(x.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(y, np.asarray(layers.MaxPooling2D()(x)).transpose(0, 3, 1, 2))


def test_pooling_gradients_match_slice_reference():
    x = randn(1, 4, 4, 2)
    g = randn(1, 2, 2, 2)

    def windows(x):  # (1, 2, 2, 2, 4): the four entries of each 2x2 window
        return jnp.stack([x[:, i::2, j::2] for i in range(2) for j in range(2)], -1)

    for layer, reduce in ((layers.MaxPooling2D(), jnp.max), (layers.AveragePooling2D(), jnp.mean)):
        (dx,) = grads_through_stateless_call(layer, x, g, argnums=(1,))
        (want,) = reference_grads(lambda p, x: reduce(windows(x), -1), [], x, g)[1:]
        assert_trees_close(dx, want)


def test_global_pooling():
    x3, x4 = randn(2, 5, 3), randn(2, 3, 4, 3)
    np.testing.assert_allclose(layers.GlobalAveragePooling1D()(x3), x3.mean(1), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling1D()(x3), x3.max(1))
    np.testing.assert_allclose(layers.GlobalAveragePooling2D()(x4), x4.mean((1, 2)), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling2D()(x4), x4.max((1, 2)))
    np.testing.assert_allclose(layers.GlobalAveragePooling2D(keepdims=True)(x4),
                               x4.mean((1, 2), keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(
        layers.GlobalAveragePooling1D(data_format="channels_first")(x3), x3.mean(2), rtol=1e-6)
    g = randn(2, 3)
    (dx,) = grads_through_stateless_call(layers.GlobalAveragePooling2D(), x4, g, argnums=(1,))
    np.testing.assert_allclose(dx, np.broadcast_to(g[:, None, None] / 12, x4.shape), rtol=1e-6)


def test_pooling_symbolic_shapes_and_rank_error():
    x = loopax.Input(shape=(6, 6, 3))
    assert layers.MaxPooling2D()(x).shape == (None, 3, 3, 3)
    assert layers.AveragePooling2D(3, strides=2, padding="same")(x).shape == (None, 3, 3, 3)
    assert layers.GlobalMaxPooling2D()(x).shape == (None, 3)
    with pytest.raises(ValueError, match=r"'pool'.*\(2, 6, 3\).*rank 4"):
        layers.MaxPooling2D(name="pool")(randn(2, 6, 3))
