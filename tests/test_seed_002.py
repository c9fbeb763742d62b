"""Seed 002 (JAX as differentiable NumPy) with loopax layers and Variables."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax


@pytest.fixture
def line_data():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(100, 1)).astype(np.float32)
    noise = rng.normal(scale=0.1, size=(100, 1)).astype(np.float32)
    return xs, xs * 3 - 1 + noise


def test_value_and_grad_has_aux_jit_over_stateless_call_fits_a_line(line_data):
    xs, ys = line_data
    layer = loopax.layers.Dense(1, kernel_initializer="ones", bias_initializer="ones")
    layer(xs)

    def loss_fn(trainable, x, y):
        prediction, _ = layer.stateless_call(trainable, [], x)
        loss = jnp.mean((prediction - y) ** 2)
        return loss, prediction  # aux: the predictions

    @jax.jit
    def update(theta, x, y, lr=0.1):
        (loss, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(theta, x, y)
        return [t - lr * g for t, g in zip(theta, grads)], loss

    theta = [v.value for v in layer.trainable_variables]
    for _ in range(300):
        theta, loss = update(theta, xs, ys)
    w, b = float(theta[0][0, 0]), float(theta[1][0])
    # The least-squares line through the same points is the exact optimum.
    w_ls, b_ls = np.polyfit(xs[:, 0], ys[:, 0], 1)
    assert w == pytest.approx(w_ls, abs=1e-3) and b == pytest.approx(b_ls, abs=1e-3)
    assert w == pytest.approx(3.0, abs=0.05) and b == pytest.approx(-1.0, abs=0.05)


def test_grad_over_a_list_of_variables(line_data):
    xs, ys = line_data
    w, b = loopax.Variable(1.0, name="w"), loopax.Variable(1.0, name="b")

    def loss_fn(theta, x, y):
        w, b = theta
        return jnp.mean((w.value * x + b.value - y) ** 2)

    grads = jax.grad(loss_fn)([w, b], xs, ys)
    # d/dw mean((wx+b-y)^2) = mean(2 (wx+b-y) x); d/db = mean(2 (wx+b-y))
    r = xs * 1.0 + 1.0 - ys
    assert float(grads[0].value) == pytest.approx(np.mean(2 * r * xs), rel=1e-5)
    assert float(grads[1].value) == pytest.approx(np.mean(2 * r), rel=1e-5)
    # Variables and their gradients are pytrees with the same structure.
    assert jax.tree_util.tree_structure([w, b]) == jax.tree_util.tree_structure(grads)
    new = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, [w, b], grads)
    assert float(new[0].value) == pytest.approx(1.0 - 0.1 * np.mean(2 * r * xs), rel=1e-5)
