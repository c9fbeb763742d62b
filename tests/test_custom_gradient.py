"""custom_gradient: the same hand-written gradient under the tape, jax.grad and jax.jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax.src.custom_gradient import custom_gradient
from loopax.src.tape import GradientTape


@custom_gradient
def bar(x, y):
    def grad(upstream):
        dz_dx = y
        dz_dy = x
        return upstream * dz_dx, upstream * dz_dy
    z = x * y
    return z, grad


def test_seed_001_bar_with_a_persistent_tape():
    x = loopax.constant([2.0, 5.0], dtype="float32")
    y = loopax.constant([3.0, 8.0], dtype="float32")
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        tape.watch(y)
        z = bar(x, y)
    np.testing.assert_array_equal(np.asarray(z), [6.0, 40.0])
    np.testing.assert_array_equal(np.asarray(tape.gradient(z, x)), [3.0, 8.0])
    np.testing.assert_array_equal(np.asarray(tape.gradient(z, y)), [2.0, 5.0])


@custom_gradient
def square_with_wrong_gradient(x):
    """x**2 whose declared derivative is 10 (the true one is 2x)."""
    def grad(upstream):
        return upstream * 10.0
    return x * x, grad


def test_a_wrong_custom_gradient_is_used_by_tape_grad_and_jit():
    x = loopax.constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = square_with_wrong_gradient(x) * 2.0
    assert float(y) == 18.0
    assert float(tape.gradient(y, x)) == 20.0
    f = lambda a: square_with_wrong_gradient(a) * 2.0
    assert float(jax.grad(f)(3.0)) == 20.0
    assert float(jax.jit(jax.grad(f))(3.0)) == 20.0
    np.testing.assert_array_equal(jax.vmap(jax.grad(f))(jnp.arange(3.0)), [20.0] * 3)


def test_variables_inside_get_their_own_gradients():
    scale = loopax.Variable(2.0, name="scale")
    shift = loopax.Variable(np.zeros(2, np.float32), trainable=False, name="shift")

    @custom_gradient
    def scaled(x):
        def grad(upstream, variables=None):
            assert variables == [scale]
            return upstream * 100.0, [jnp.sum(upstream) * 7.0]
        return x * scale + shift, grad

    x = loopax.constant([1.0, 4.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    np.testing.assert_array_equal(np.asarray(y), [2.0, 8.0])
    gx, gs = tape.gradient(y, [x, scale])
    np.testing.assert_array_equal(np.asarray(gx), [100.0, 100.0])
    assert float(gs) == 14.0
    scale.assign(3.0)            # the value is read at call time, not baked in
    np.testing.assert_array_equal(np.asarray(scaled(x)), [3.0, 12.0])


def test_multiple_outputs_and_a_static_argument():
    @custom_gradient
    def split(x, power):
        def grad(up_a, up_b):
            return up_a * 1.0 + up_b * 2.0
        return (x ** power, x * 2.0), grad

    x = loopax.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        a, b = split(x, 3)
        total = a + b * 10.0
    np.testing.assert_array_equal(np.asarray(a), [1.0, 8.0])
    np.testing.assert_array_equal(np.asarray(tape.gradient(total, x)), [21.0, 21.0])


def test_bad_custom_gradients_have_clear_errors():
    v = loopax.Variable(1.0)

    @custom_gradient
    def no_variables_arg(x):
        return x * v, lambda up: up

    @custom_gradient
    def too_many(x):
        return x * 2.0, lambda up: (up, up)

    @custom_gradient
    def not_a_pair(x):
        return x

    x = jnp.ones(2)
    with pytest.raises(TypeError, match="keyword argument `variables`"):
        jax.grad(lambda a: jnp.sum(no_variables_arg(a)))(x)
    with pytest.raises(ValueError, match="returned 2 gradients"):
        jax.grad(lambda a: jnp.sum(too_many(a)))(x)
    with pytest.raises(TypeError, match=r"\(outputs, grad_fn\)"):
        not_a_pair(x)
