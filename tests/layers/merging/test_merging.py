"""Merging layers against NumPy."""

import numpy as np
import pytest
from layer_checks import grads_through_stateless_call

import loopax
from loopax import layers

rng = np.random.default_rng(5)
a, b, c = (rng.standard_normal((2, 3)).astype("float32") for _ in range(3))


@pytest.mark.parametrize("layer_cls, want", [
    (layers.Add, a + b + c),
    (layers.Multiply, a * b * c),
    (layers.Average, (a + b + c) / 3),
    (layers.Maximum, np.maximum(np.maximum(a, b), c)),
    (layers.Minimum, np.minimum(np.minimum(a, b), c)),
], ids=["Add", "Multiply", "Average", "Maximum", "Minimum"])
def test_elementwise_merges(layer_cls, want):
    np.testing.assert_allclose(layer_cls()([a, b, c]), want, rtol=1e-6)


def test_subtract_and_broadcasting():
    np.testing.assert_allclose(layers.Subtract()([a, b]), a - b)
    np.testing.assert_allclose(layers.Add()([a, b[:, :1]]), a + b[:, :1])
    with pytest.raises(ValueError, match="exactly 2"):
        layers.Subtract()([a, b, c])


def test_concatenate():
    np.testing.assert_array_equal(layers.Concatenate()([a, b[:, :2]]),
                                  np.concatenate([a, b[:, :2]], -1))
    np.testing.assert_array_equal(layers.Concatenate(axis=0)([a, b]), np.concatenate([a, b], 0))
    np.testing.assert_array_equal(layers.concatenate([a, b]), np.concatenate([a, b], -1))


def test_merge_gradient_of_add_is_ones_for_every_input():
    g = rng.standard_normal((2, 3)).astype("float32")
    (grads,) = grads_through_stateless_call(layers.Add(), [a, b], g, argnums=(1,))
    np.testing.assert_allclose(grads[0], g)
    np.testing.assert_allclose(grads[1], g)


def test_merge_errors_name_layer_and_shapes():
    with pytest.raises(ValueError, match=r"'join'.*\(2, 3\).*\(2, 4\)"):
        layers.Add(name="join")([a, np.ones((2, 4), "float32")])
    with pytest.raises(ValueError, match=r"'cat'.*axis -1"):
        layers.Concatenate(name="cat")([a, np.ones((3, 3), "float32")])
    with pytest.raises(ValueError, match="list"):
        layers.Add()(a)


def test_merge_symbolic_shapes():
    x, y = loopax.Input(shape=(3,)), loopax.Input(shape=(5,))
    assert layers.Concatenate()([x, y]).shape == (None, 8)
    assert layers.Add()([x, x]).shape == (None, 3)
