"""Conv1D / Conv2D against a convolution written as explicit shifted slices
(no lax.conv), for outputs and for gradients through stateless_call."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from layer_checks import (
    assert_trees_close,
    check_stateless_matches_stateful,
    grads_through_stateless_call,
    reference_grads,
)

import loopax
from loopax import layers

rng = np.random.default_rng(1)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def same_padding(size, kernel, stride, dilation):
    span = (kernel - 1) * dilation + 1
    total = max((math.ceil(size / stride) - 1) * stride + span - size, 0)
    return total // 2, total - total // 2


def reference_conv(x, kernel, strides, dilation, pads, groups=1):
    """Channels-last cross-correlation: y[b, i] = Σ_o x[b, i·s + o·d] · k[o]."""
    rank = kernel.ndim - 2
    x = jnp.pad(x, [(0, 0)] + list(pads) + [(0, 0)])
    out_sizes = [(x.shape[1 + i] - dilation[i] * (kernel.shape[i] - 1) - 1) // strides[i] + 1
                 for i in range(rank)]
    cin, filters = kernel.shape[-2], kernel.shape[-1]
    fg = filters // groups
    out = 0
    for offsets in itertools.product(*(range(n) for n in kernel.shape[:rank])):
        window = tuple(slice(o * d, o * d + (n - 1) * s + 1, s)
                       for o, d, n, s in zip(offsets, dilation, out_sizes, strides))
        patch = x[(slice(None),) + window]
        parts = [patch[..., g * cin:(g + 1) * cin] @ kernel[offsets][:, g * fg:(g + 1) * fg]
                 for g in range(groups)]
        out = out + jnp.concatenate(parts, axis=-1)
    return out


def check_conv(layer, x, strides, dilation, pads, groups=1, activation=lambda t: t):
    out = check_stateless_matches_stateful(layer, x)

    def ref(params, x):
        return activation(reference_conv(x, params[0], strides, dilation, pads, groups)
                          + params[1])

    params = [layer.kernel.value, layer.bias.value]
    np.testing.assert_allclose(out, jax.jit(ref)(params, x), rtol=1e-5, atol=1e-5)
    g = randn(*out.shape)
    assert_trees_close(grads_through_stateless_call(layer, x, g),
                       reference_grads(ref, params, x, g), rtol=1e-4, atol=1e-4)


def test_conv2d_valid_with_activation():
    layer = layers.Conv2D(3, (2, 3), activation="relu", bias_initializer="random_normal")
    check_conv(layer, randn(2, 5, 5, 2), (1, 1), (1, 1), [(0, 0), (0, 0)],
               activation=lambda t: jnp.maximum(t, 0))
    assert layer.kernel.shape == (2, 3, 2, 3) and layer.bias.shape == (3,)
    assert [v.path for v in layer.weights] == [f"{layer.name}/kernel", f"{layer.name}/bias"]


def test_conv2d_same_padding_with_strides():
    layer = layers.Conv2D(2, 3, strides=2, padding="same", bias_initializer="ones")
    x = randn(2, 5, 6, 2)
    pads = [same_padding(5, 3, 2, 1), same_padding(6, 3, 2, 1)]
    check_conv(layer, x, (2, 2), (1, 1), pads)
    assert layer(x).shape == (2, 3, 3, 2)


def test_conv2d_dilation_and_groups():
    check_conv(layers.Conv2D(2, 2, dilation_rate=2), randn(1, 5, 5, 2), (1, 1), (2, 2),
               [(0, 0), (0, 0)])
    check_conv(layers.Conv2D(4, 2, groups=2), randn(1, 4, 4, 4), (1, 1), (1, 1),
               [(0, 0), (0, 0)], groups=2)


def test_conv2d_channels_first_matches_channels_last():
    x = randn(2, 4, 4, 3)
    last = layers.Conv2D(2, 3, padding="same")
    first = layers.Conv2D(2, 3, padding="same", data_format="channels_first")
    y_last = last(x)
    first.build((2, 3, 4, 4))
    first.set_weights(last.get_weights())
    y_first = first(x.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(y_first, np.asarray(y_last).transpose(0, 3, 1, 2),
                               rtol=1e-5, atol=1e-5)


def test_conv1d_valid_and_causal():
    x = randn(2, 6, 3)
    check_conv(layers.Conv1D(2, 3), x, (1,), (1,), [(0, 0)])
    causal = layers.Conv1D(2, 3, padding="causal", dilation_rate=2)
    check_conv(causal, x, (1,), (2,), [(4, 0)])
    # Output t sees only inputs up to t.
    x2 = x.copy()
    x2[:, 4:] += 1.0
    np.testing.assert_allclose(causal(x2)[:, :4], causal(x)[:, :4], rtol=1e-6)


def test_conv_kernel_fans_count_the_receptive_field():
    layer = layers.Conv2D(8, 3, kernel_initializer="he_uniform")
    layer.build((None, 5, 5, 4))
    limit = math.sqrt(6 / (3 * 3 * 4))
    k = layer.kernel.numpy()
    assert np.abs(k).max() <= limit and np.abs(k).max() > 0.8 * limit


def test_conv_symbolic_shape():
    x = loopax.Input(shape=(8, 8, 3))
    assert layers.Conv2D(4, 3, strides=2, padding="same")(x).shape == (None, 4, 4, 4)
    assert layers.Conv2D(4, 3)(x).shape == (None, 6, 6, 4)
    assert layers.Conv1D(5, 2)(loopax.Input(shape=(None, 3))).shape == (None, None, 5)


def test_conv_errors_name_layer_and_shapes():
    with pytest.raises(ValueError, match=r"'img'.*\(2, 5, 3\).*rank 4"):
        layers.Conv2D(2, 3, name="img")(randn(2, 5, 3))
    layer = layers.Conv2D(2, 3, name="img2")
    layer(randn(1, 5, 5, 3))
    with pytest.raises(ValueError, match=r"'img2'.*\(1, 5, 5, 4\)"):
        layer(randn(1, 5, 5, 4))
    with pytest.raises(ValueError, match="padding"):
        layers.Conv2D(2, 3, padding="causal")
    with pytest.raises(ValueError, match="groups"):
        layers.Conv2D(3, 3, groups=2)
