"""Regularizers: penalties by formula, as layer losses (eager and stateless),
names and configs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from loopax import layers, regularizers

w = np.array([[1.0, -2.0], [0.5, 3.0]], "float32")


def test_penalties_match_formulas():
    np.testing.assert_allclose(regularizers.L1(0.1)(w), 0.1 * 6.5, rtol=1e-6)
    np.testing.assert_allclose(regularizers.L2(0.1)(w), 0.1 * 14.25, rtol=1e-6)
    np.testing.assert_allclose(regularizers.L1L2(l1=0.1, l2=0.2)(w), 0.65 + 2.85, rtol=1e-6)
    np.testing.assert_allclose(regularizers.get("l2")(w), 0.01 * 14.25, rtol=1e-6)
    np.testing.assert_allclose(regularizers.get("l1")(w), 0.01 * 6.5, rtol=1e-6)


def test_orthogonal_regularizer():
    reg = regularizers.OrthogonalRegularizer(factor=0.5)
    np.testing.assert_allclose(reg(np.eye(3, dtype="float32")), 0, atol=1e-7)
    # rows (1, 0) and (1, 1)/√2: one off-diagonal pair with cosine 1/√2.
    rows = np.array([[1.0, 0.0], [1.0, 1.0]], "float32")
    np.testing.assert_allclose(reg(rows), 0.5 * (2 / np.sqrt(2)) / 2, rtol=1e-5)
    cols = regularizers.OrthogonalRegularizer(factor=0.5, mode="columns")
    np.testing.assert_allclose(cols(rows.T), reg(rows), rtol=1e-6)


def test_layer_losses_come_from_current_weights():
    layer = layers.Dense(2, kernel_regularizer="l2", bias_regularizer=regularizers.L1(0.5),
                         bias_initializer="ones")
    layer(np.ones((1, 2), "float32"))
    layer.kernel.assign(w)
    np.testing.assert_allclose(layer.losses[0], 0.01 * 14.25, rtol=1e-6)
    np.testing.assert_allclose(layer.losses[1], 0.5 * 2, rtol=1e-6)


def test_stateless_losses_use_substituted_values_and_are_differentiable():
    layer = layers.Dense(2, kernel_regularizer=regularizers.L2(0.1), use_bias=False)
    x = np.ones((1, 2), "float32")
    layer(x)

    def total_loss(kernel):
        out, _, losses = layer.stateless_call([kernel], [], x, return_losses=True)
        return sum(losses)

    np.testing.assert_allclose(total_loss(jnp.asarray(w)), 0.1 * 14.25, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(total_loss)(jnp.asarray(w)), 0.2 * w, rtol=1e-6)


def test_activity_regularizer_on_dense_is_divided_by_the_batch_size():
    layer = layers.Dense(2, activity_regularizer=regularizers.L1(0.1),
                         kernel_initializer="ones")
    out = layer(np.arange(12, dtype="float32").reshape(4, 3) - 5)
    np.testing.assert_allclose(layer.losses, [0.1 * np.abs(np.asarray(out)).sum() / 4],
                               rtol=1e-6)


def test_names_configs_and_errors():
    assert isinstance(regularizers.get("l1_l2"), regularizers.L1L2)
    assert isinstance(regularizers.get("L2"), regularizers.L2)
    assert regularizers.get(None) is None
    reg = regularizers.L1L2(l1=0.3, l2=0.4)
    clone = regularizers.get(regularizers.serialize(reg))
    assert clone.get_config() == {"l1": 0.3, "l2": 0.4}
    fn = lambda x: jnp.sum(x)
    assert regularizers.get(fn) is fn
    with pytest.raises(ValueError, match=r"'l3'.*l1.*l2"):
        regularizers.get("l3")
    with pytest.raises(ValueError, match="non-negative"):
        regularizers.L2(-1.0)
