"""Constraints against NumPy projections; names and attachment to variables."""

import numpy as np
import pytest

from loopax import constraints, layers

w = np.array([[3.0, 0.1], [4.0, -0.2]], "float32")  # column norms 5 and ~0.224
norms = np.sqrt((w ** 2).sum(0, keepdims=True))


def test_max_norm_rescales_only_large_columns():
    got = np.asarray(constraints.MaxNorm(2.0)(w))
    np.testing.assert_allclose(got[:, 0], w[:, 0] * 2 / 5, rtol=1e-5)
    np.testing.assert_allclose(got[:, 1], w[:, 1], rtol=1e-5)
    rows = np.asarray(constraints.MaxNorm(1.0, axis=1)(w))
    np.testing.assert_allclose(np.sqrt((rows ** 2).sum(1)), 1.0, rtol=1e-5)


def test_non_neg_unit_norm_min_max_norm():
    np.testing.assert_array_equal(constraints.NonNeg()(w), np.maximum(w, 0))
    np.testing.assert_allclose(constraints.UnitNorm()(w), w / norms, rtol=1e-5)
    got = np.asarray(constraints.MinMaxNorm(0.5, 1.0, rate=0.5)(w))
    desired = 0.5 * np.clip(norms, 0.5, 1.0) + 0.5 * norms
    np.testing.assert_allclose(got, w * desired / norms, rtol=1e-5)


def test_get_names_and_configs():
    assert isinstance(constraints.get("max_norm"), constraints.MaxNorm)
    assert isinstance(constraints.get("NonNeg"), constraints.NonNeg)
    c = constraints.get(constraints.serialize(constraints.MinMaxNorm(0.1, 2.0, 0.5, 1)))
    assert c.get_config() == {"min_value": 0.1, "max_value": 2.0, "rate": 0.5, "axis": 1}
    with pytest.raises(ValueError, match=r"'maxnorm'.*max_norm"):
        constraints.get("maxnorm")


def test_layer_puts_constraint_on_its_variable():
    layer = layers.Conv1D(2, 2, kernel_constraint=constraints.UnitNorm(axis=[0, 1]))
    layer.build((None, 4, 3))
    projected = np.asarray(layer.kernel.constraint(layer.kernel.value))
    np.testing.assert_allclose(np.sqrt((projected ** 2).sum((0, 1))), 1.0, rtol=1e-5)
    assert layer.bias.constraint is None
