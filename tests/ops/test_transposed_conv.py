"""Transposed convolution on CPU: the kernel gradient is strided slices and a matmul
(not XLA:CPU's slow window-dilated convolution), with Keras 3.15.1's numbers.

Keras's `ops.conv_transpose` (JAX backend, `lax.conv_transpose`) is the reference for
the output, both gradients, a forward-mode derivative and a second derivative, on
every geometry the layers produce (strides, "same"/"valid", output_padding, dilation,
channels_first, 1-D to 3-D)."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

from loopax import ops

keras = pytest.importorskip("keras")

rng = np.random.default_rng(21)


def normal(*shape):
    return jnp.asarray(rng.standard_normal(shape), jnp.float32)


# (inputs shape, kernel shape, conv_transpose keyword arguments)
GEOMETRIES = [
    pytest.param((2, 5, 3), (3, 4, 3), {"strides": 2}, id="1d-valid-stride2"),
    pytest.param((2, 5, 5, 3), (4, 4, 2, 3), {"strides": 2, "padding": "same"},
                 id="2d-same-k4-stride2"),
    pytest.param((2, 4, 5, 3), (3, 2, 2, 3), {"strides": (2, 3), "padding": "same",
                                             "output_padding": (1, 2)},
                 id="2d-same-output_padding"),
    pytest.param((2, 4, 4, 3), (3, 3, 2, 3), {"strides": 3, "output_padding": 1},
                 id="2d-valid-output_padding"),
    pytest.param((2, 6, 5, 3), (3, 3, 2, 3), {"dilation_rate": 2, "padding": "same"},
                 id="2d-dilated-same"),
    pytest.param((2, 3, 5, 4), (2, 3, 2, 3), {"strides": 2, "data_format": "channels_first"},
                 id="2d-channels_first"),
    pytest.param((1, 3, 4, 3, 2), (2, 3, 2, 3, 2), {"strides": 2, "padding": "same"},
                 id="3d-same-stride2"),
]


def losses(x_shape, k_shape, kwargs):
    """sum(conv_transpose(x, k) * c) for loopax and Keras, on shared x, k, c."""
    x, kernel = normal(*x_shape), normal(*k_shape)
    out_shape = keras.ops.conv_transpose(x, kernel, **kwargs).shape
    cotangent = normal(*out_shape)

    def make(conv_transpose):
        return lambda x, k: jnp.sum(jnp.asarray(conv_transpose(x, k, **kwargs)) * cotangent)
    return x, kernel, make(ops.conv_transpose), make(keras.ops.conv_transpose)


def close(actual, expected):
    scale = float(jnp.max(jnp.abs(expected))) or 1.0
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-5,
                               atol=1e-5 * scale)


@pytest.mark.parametrize("x_shape,k_shape,kwargs", GEOMETRIES)
def test_output_and_both_gradients_match_keras(x_shape, k_shape, kwargs):
    x, kernel, ours, theirs = losses(x_shape, k_shape, kwargs)
    value, (grad_x, grad_k) = jax.jit(jax.value_and_grad(ours, (0, 1)))(x, kernel)
    expected_value, (expected_x, expected_k) = jax.value_and_grad(theirs, (0, 1))(x, kernel)
    close(value, expected_value)
    close(grad_x, expected_x)
    close(grad_k, expected_k)


@pytest.mark.parametrize("x_shape,k_shape,kwargs", GEOMETRIES[1:3])
def test_forward_mode_and_second_derivative_match_keras(x_shape, k_shape, kwargs):
    x, kernel, ours, theirs = losses(x_shape, k_shape, kwargs)
    direction = normal(*k_shape)
    close(jax.jvp(lambda k: ours(x, k), (kernel,), (direction,))[1],
          jax.jvp(lambda k: theirs(x, k), (kernel,), (direction,))[1])

    def mixed(loss):  # d/dx <grad_k loss, direction>: a second derivative through both
        return jax.grad(lambda x: jnp.vdot(jax.grad(loss, 1)(x, kernel), direction))(x)
    close(mixed(ours), mixed(theirs))


def conv_output_shapes(jaxpr):
    """Output shapes of every convolution in `jaxpr`, nested jaxprs included."""
    shapes = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "conv_general_dilated":
            shapes.append(eqn.outvars[0].aval.shape)
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", param)
            if hasattr(inner, "eqns"):
                shapes.extend(conv_output_shapes(inner))
    return shapes


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the matmul form is CPU-only")
def test_cpu_kernel_gradient_is_not_a_convolution():
    """lax's kernel gradient is a window-dilated convolution that XLA:CPU runs ~25x
    slower than the input gradient (the Conv2DTranspose of a DCGAN generator)."""
    x, kernel = normal(2, 5, 5, 3), normal(4, 4, 4, 3)

    def loss(kernel):
        return jnp.sum(ops.conv_transpose(x, kernel, 2, "same") ** 2)
    shapes = conv_output_shapes(jax.make_jaxpr(jax.grad(loss))(kernel).jaxpr)
    assert shapes, "the forward pass is still lax's convolution"
    kernel_like = [shape for shape in shapes if sorted(shape) == sorted(kernel.shape)]
    assert not kernel_like, f"the kernel gradient is a convolution (output {kernel_like})"
