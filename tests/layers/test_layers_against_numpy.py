"""Convolution, shape, normalization and activation layers and image ops against
independent NumPy/JAX references (tests/keras_parity compares them with Keras)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import loopax
from loopax import layers

rng = np.random.default_rng(4)


@pytest.mark.parametrize("rank", [1, 2])
def test_conv_transpose_is_the_adjoint_of_a_strided_convolution(rank):
    """Conv*Transpose("valid", stride 2, kernel 3) is the VJP of the forward
    convolution whose kernel is the same array read as (k, in=filters, out=channels)."""
    n, channels, filters = 4, 3, 2
    x = rng.standard_normal((2,) + (n,) * rank + (channels,)).astype("float32")
    layer = (layers.Conv1DTranspose if rank == 1 else layers.Conv2DTranspose)(
        filters, 3, strides=2, use_bias=False)
    out = layer(x)
    kernel = layer.kernel.value                       # (*k, filters, channels)
    spec = ("NWC", "WIO", "NWC") if rank == 1 else ("NHWC", "HWIO", "NHWC")
    size = (n - 1) * 2 + 3
    forward = lambda z: lax.conv_general_dilated(
        z, kernel, (2,) * rank, "VALID", dimension_numbers=spec)
    _, vjp = jax.vjp(forward, jnp.zeros((2,) + (size,) * rank + (filters,)))
    np.testing.assert_allclose(out, vjp(jnp.asarray(x))[0], rtol=1e-5, atol=1e-5)


def test_depthwise_conv_filters_each_channel_on_its_own():
    x = rng.standard_normal((2, 5, 5, 3)).astype("float32")
    layer = layers.DepthwiseConv2D(2, depth_multiplier=2, use_bias=False)
    out = np.asarray(layer(x))
    kernel = np.asarray(layer.kernel.value)              # (2, 2, 3, 2)
    for c in range(3):
        for m in range(2):
            single = layers.Conv2D(1, 2, use_bias=False)
            single.build((2, 5, 5, 1))
            single.set_weights([kernel[:, :, c:c + 1, m:m + 1]])
            np.testing.assert_allclose(
                out[..., c * 2 + m],
                np.asarray(single(x[..., c : c + 1]))[..., 0],
                rtol=1e-5,
                atol=1e-5,
            )


def test_shape_layers_against_numpy():
    x = rng.standard_normal((2, 3, 4, 2)).astype("float32")
    np.testing.assert_array_equal(layers.UpSampling2D((2, 3))(x),
                                  x.repeat(2, axis=1).repeat(3, axis=2))
    np.testing.assert_array_equal(layers.ZeroPadding2D(((1, 0), (0, 2)))(x),
                                  np.pad(x, ((0, 0), (1, 0), (0, 2), (0, 0))))
    np.testing.assert_array_equal(layers.Cropping2D(((1, 1), (0, 2)))(x), x[:, 1:2, 0:2])
    np.testing.assert_array_equal(layers.Permute((3, 1, 2))(x), x.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(layers.RepeatVector(3)(x[:, 0, 0]),
                                  np.stack([x[:, 0, 0]] * 3, axis=1))


def test_normalization_layers_against_numpy():
    x = rng.standard_normal((2, 3, 4)).astype("float32")
    groups = np.asarray(layers.GroupNormalization(groups=2, epsilon=1e-5)(x))
    g = x.reshape(2, 3, 2, 2)
    ref = (g - g.mean((1, 3), keepdims=True)) / np.sqrt(g.var((1, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(groups, ref.reshape(x.shape), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layers.UnitNormalization()(x),
                               x / np.linalg.norm(x, axis=-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(layers.RMSNormalization(epsilon=0.0)(x),
                               x / np.sqrt((x ** 2).mean(-1, keepdims=True)), rtol=1e-5)


def test_activation_layers_against_numpy():
    x = np.linspace(-3, 3, 13, dtype="float32")
    np.testing.assert_allclose(layers.ReLU(max_value=2.0)(x), np.clip(x, 0, 2))
    np.testing.assert_allclose(layers.LeakyReLU(0.1)(x), np.where(x >= 0, x, 0.1 * x))
    np.testing.assert_allclose(layers.ELU(0.5)(x), np.where(x > 0, x, 0.5 * np.expm1(x)),
                               rtol=1e-6)
    prelu = layers.PReLU(alpha_initializer=loopax.initializers.Constant(0.25))
    np.testing.assert_allclose(prelu(x[None]), np.where(x >= 0, x, 0.25 * x)[None])


def test_image_ops():
    images = rng.standard_normal((2, 3, 4, 1)).astype("float32")
    np.testing.assert_array_equal(
        loopax.ops.image.resize(images, (6, 8), interpolation="nearest"),
        images.repeat(2, axis=1).repeat(2, axis=2))
    np.testing.assert_array_equal(
        loopax.ops.image.crop_images(images, 1, 1, target_height=2, target_width=2),
        images[:, 1:3, 1:3])
    with pytest.raises(ValueError, match="crop_images: give exactly one"):
        loopax.ops.image.crop_images(images, 1, 1)
    with pytest.raises(ValueError, match="resize: `interpolation`"):
        loopax.ops.image.resize(images, (2, 2), interpolation="area")
