"""Max and average pooling on CPU without `select_and_scatter`, with the same numbers.

The reference for max pooling is `jax.grad` of `lax.reduce_window` max (what Keras
3.15.1's JAX backend runs, its gradient a `select_and_scatter`): outputs and
gradients must be equal to the bit on ReLU outputs, whose windows are full of tied
zeros, for every geometry the layers produce (1-D to 3-D, tiling and overlapping
windows, "same"/"valid", channels first/last), with NaNs and all -inf windows too.
Keras itself is compared on the layers and ops below; the compiled gradient must
hold no `select_and_scatter` (the slow XLA:CPU loop this replaces)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import loopax
from loopax import layers, ops

keras = pytest.importorskip("keras")

rng = np.random.default_rng(37)

SIZES = {1: (13,), 2: (7, 6), 3: (5, 4, 5)}
GEOMETRIES = [
    pytest.param(n, window, stride, padding, channels_last,
                 id=f"{n}d-k{window}-s{stride}-{padding.lower()}-"
                    f"{'last' if channels_last else 'first'}")
    for n, (window, stride), padding, channels_last in itertools.product(
        (1, 2, 3), ((2, 2), (3, 2), (3, 3), (2, 1)), ("VALID", "SAME"), (True, False))
    if channels_last or n == 2]   # channels-first once: the same code, other axes


def relu_ties(shape):
    """ReLU of a normal sample, one channel rounded: many tied maxima (zeros, ints)."""
    x = np.maximum(rng.standard_normal(shape), 0).astype(np.float32)
    x[:, 0] = np.round(x[:, 0])
    return jnp.asarray(x)


def reduce_window_max(x, window, strides, padding, channels_last):
    full = (lambda v: (1,) + v + (1,)) if channels_last else (lambda v: (1, 1) + v)
    return lax.reduce_window(x, -jnp.inf, lax.max, full(window), full(strides), padding)


@pytest.mark.parametrize("n, window, stride, padding, channels_last", GEOMETRIES)
def test_max_pool_output_and_gradient_equal_reduce_window_to_the_bit(
        n, window, stride, padding, channels_last):
    spatial = SIZES[n]
    shape = (2,) + spatial + (3,) if channels_last else (2, 3) + spatial
    x = relu_ties(shape)
    args = ((window,) * n, (stride,) * n, padding, channels_last)
    data_format = "channels_last" if channels_last else "channels_first"

    def loopax_pool(x):
        return ops.max_pool(x, window, stride, padding.lower(), data_format)

    want, want_vjp = jax.vjp(lambda x: reduce_window_max(x, *args), x)
    got, got_vjp = jax.vjp(loopax_pool, x)
    g = jnp.asarray(rng.standard_normal(want.shape), jnp.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_vjp(g)[0], want_vjp(g)[0])


@pytest.mark.parametrize("values, padding, stride", [
    ([0.0, np.nan, 0.0, 0.0], "VALID", 2), ([0.0, np.nan, 2.0, 1.0], "VALID", 2),
    ([np.nan, 1.0, np.nan, 0.0], "VALID", 1), ([-np.inf] * 4, "SAME", 1),
    ([-np.inf, 3.0, -np.inf, -np.inf], "SAME", 2)],
    ids=["nan-first", "nan-then-max", "nans-overlapping", "all-minus-inf", "minus-inf-same"])
def test_max_pool_nan_and_minus_inf_windows_follow_select_and_scatter(values, padding, stride):
    # select_and_scatter keeps its choice while it is >= the next entry: after a NaN
    # the next entry is chosen, and an all -inf window's gradient may go to padding.
    x = jnp.tile(jnp.asarray(values, jnp.float32).reshape(1, 2, 2, 1), (1, 2, 2, 1))
    args = ((2, 2), (stride, stride), padding, True)
    want, want_vjp = jax.vjp(lambda x: reduce_window_max(x, *args), x)
    got, got_vjp = jax.vjp(lambda x: ops.max_pool(x, 2, stride, padding.lower()), x)
    g = jnp.arange(1.0, 1.0 + want.size, dtype=jnp.float32).reshape(want.shape)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_vjp(g)[0], want_vjp(g)[0])


@pytest.mark.parametrize("pool_size, strides, padding", [
    (2, None, "valid"), (2, None, "same"), (3, 2, "same"), (3, 1, "valid")],
    ids=["2-valid", "2-same", "3-stride2-same", "3-overlapping-valid"])
def test_pooling_layers_gradients_equal_keras_on_relu_ties(pool_size, strides, padding):
    x = relu_ties((2, 9, 8, 3))
    g = jnp.asarray(rng.standard_normal((2, 9, 8, 3)), jnp.float32)  # cropped below
    for name in ("MaxPooling2D", "AveragePooling2D"):
        pools = [getattr(lib.layers, name)(pool_size, strides, padding)
                 for lib in (keras, loopax)]

        def grad(pool):
            def f(x):
                y = pool(x)
                return jnp.sum(jnp.asarray(y) * g[:, :y.shape[1], :y.shape[2]])
            return jax.jit(jax.value_and_grad(f))(x)   # eagerly: each op compiled alone

        (want_y, want_dx), (got_y, got_dx) = grad(pools[0]), grad(pools[1])
        np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(got_dx, want_dx, rtol=1e-5, atol=1e-5, err_msg=name)


def test_max_pool_ops_1d_and_3d_equal_keras_on_relu_ties():
    for shape, pool_size, strides in (((2, 11, 3), 2, 2), ((1, 5, 4, 5, 2), 3, 2)):
        x = relu_ties(shape)
        for padding in ("valid", "same"):
            def pooled_and_pulled_back(pool, g, padding=padding):
                """Output and vjp of `pool`, compiled: eagerly, each op of the backward
                pass compiled on its own (half this test's time)."""
                out, pull_back = jax.vjp(lambda x: pool(x, pool_size, strides, padding), x)
                return out, pull_back(g)[0]

            y = jax.eval_shape(lambda x: keras.ops.max_pool(x, pool_size, strides, padding), x)
            g = jnp.asarray(rng.standard_normal(y.shape), jnp.float32)
            want = jax.jit(lambda g: pooled_and_pulled_back(keras.ops.max_pool, g))(g)
            got = jax.jit(lambda g: pooled_and_pulled_back(ops.max_pool, g))(g)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])


def test_max_pool_forward_mode_and_second_derivative():
    x = relu_ties((1, 6, 6, 2)) + jnp.arange(72.0).reshape(1, 6, 6, 2) * 1e-3
    t = jnp.asarray(rng.standard_normal(x.shape), jnp.float32)
    args = ((3, 3), (2, 2), "SAME", True)
    # Compiled: eagerly, jvp and hessian dispatched (and compiled) op by op.
    want = jax.jit(lambda t: jax.jvp(lambda x: reduce_window_max(x, *args), (x,), (t,))[1])(t)
    got = jax.jit(lambda t: jax.jvp(lambda x: ops.max_pool(x, 3, 2, "same"), (x,), (t,))[1])(t)
    np.testing.assert_array_equal(got, want)
    hessian = jax.jit(jax.hessian(lambda x: jnp.sum(ops.max_pool(x, 2) ** 2)))(x[:, :4, :4])
    # d²/dx² sum(max²) = 2 at each window's maximum, 0 elsewhere.
    np.testing.assert_array_equal(
        jnp.diagonal(hessian.reshape(32, 32)).reshape(1, 4, 4, 2),
        2.0 * (x[:, :4, :4] == jnp.repeat(jnp.repeat(ops.max_pool(x[:, :4, :4], 2), 2, 1),
                                         2, 2)))


@pytest.mark.parametrize("layer", [
    layers.MaxPooling2D(), layers.MaxPooling2D(3, 2, "same"), layers.MaxPooling1D(3, 1),
    layers.MaxPooling3D(2, padding="same", data_format="channels_first"),
    layers.AveragePooling2D(), layers.AveragePooling2D(2, padding="same")],
    ids=lambda layer: f"{type(layer).__name__}-{layer.pool_size}-{layer.strides}-"
                      f"{layer.padding}-{layer.data_format}")
def test_compiled_pooling_gradient_has_no_select_and_scatter(layer):
    shape = {1: (4, 10, 3), 2: (4, 10, 9, 3), 3: (2, 3, 6, 5, 4)}[layer.rank]
    grad = jax.jit(jax.grad(lambda x: jnp.sum(jnp.asarray(layer(x)))))
    program = grad.lower(jnp.ones(shape)).as_text()   # StableHLO, before XLA's passes
    assert "stablehlo.select_and_scatter" not in program
    if layer.reduction == "average" and layer.strides == layer.pool_size:
        assert "stablehlo.reduce_window" not in program   # tiles: a reshape and a sum
