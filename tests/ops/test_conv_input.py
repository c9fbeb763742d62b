"""`computed_once`: a convolution's input divided by a 1.0 XLA cannot fold, so that
XLA:CPU computes a residual chain once; the values and gradients must be the input's
bits exactly."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import loopax
from loopax.src.ops.conv_input import computed_once

SPECIALS = [0.0, -0.0, 1.0, -3.5, 1e-30, 6.5e4, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("first", [0.5, -0.0, np.nan, np.inf])
def test_the_input_comes_back_bit_for_bit_whatever_the_kernel(dtype, first):
    x = jnp.asarray(np.array(SPECIALS + list(np.linspace(-2, 2, 7)), np.float32), dtype)
    kernel = jnp.asarray(np.array([first, 2.0, 3.0], np.float32), dtype)
    for fn in (computed_once, jax.jit(computed_once)):
        got = fn(x, kernel)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(got, np.float32).view(np.uint32),
                                      np.asarray(x, np.float32).view(np.uint32))


def test_the_gradient_passes_through_and_the_kernel_gets_none():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(3, 4)), jnp.float32)
    kernel = jnp.ones((2, 2), jnp.float32)
    gx, gk = jax.grad(lambda x, k: jnp.sum(computed_once(x, k) * x), argnums=(0, 1))(x, kernel)
    np.testing.assert_array_equal(gx, 2 * x)
    np.testing.assert_array_equal(gk, np.zeros((2, 2)))


def test_integers_stay_as_they_are():
    x = jnp.arange(5)
    assert computed_once(x, jnp.ones(3)) is x


def residual_chain(lib):
    layers = lib.layers
    inputs = lib.Input((12, 12, 8))
    x = layers.Activation("relu")(layers.Conv2D(8, 3, padding="same")(inputs))
    for _ in range(3):
        y = layers.Conv2D(8, 3, padding="same", use_bias=False)(x)
        x = layers.Activation("relu")(layers.Add()([x, y]))
    return lib.Model(inputs, x)


def test_a_residual_network_computes_the_bits_of_plain_convolutions():
    """Outputs and gradients of Conv2D layers (with `computed_once`) equal the same
    network written with `lax.conv_general_dilated` directly, bit for bit, compiled at
    XLA's default optimization level (the suite runs -O0)."""
    loopax.utils.set_random_seed(0)
    model = residual_chain(loopax)
    weights = [v.value for v in model.trainable_variables]
    x = np.random.default_rng(1).normal(size=(8, 12, 12, 8)).astype(np.float32)

    def by_layers(weights):
        return jnp.sum(model.stateless_call(weights, [], x)[0] ** 2)

    def by_lax(weights):
        def conv(h, k):
            return lax.conv_general_dilated(h, k, (1, 1), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(conv(x, weights[0]) + weights[1])
        for k in weights[2:]:
            h = jax.nn.relu(h + conv(h, k))
        return jnp.sum(h ** 2)

    options = {"xla_backend_optimization_level": 2}
    got = jax.jit(jax.value_and_grad(by_layers), compiler_options=options)(weights)
    want = jax.jit(jax.value_and_grad(by_lax), compiler_options=options)(weights)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_array_equal(a, b)
