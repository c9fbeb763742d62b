"""Keras 3.15 activations loopax has by the same name: values, gradients and
names (`get`/`serialize`) equal to Keras's on the same inputs."""

import jax
import numpy as np
import pytest
from keras_reference import keras

from loopax import activations

# A (4, 6) input spanning the kinks (+-1, +-0.5, 0) of the piecewise activations.
X = np.linspace(-3.1, 2.9, 24).astype("float32").reshape(4, 6)
NEW_IN_ISSUE_22 = ["celu", "glu", "hard_shrink", "hard_tanh", "log_sigmoid", "soft_shrink",
                   "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink",
                   "threshold"]
# Keras 3.15.1's JAX sparsemax is not the simplex projection (docs/keras_differences.md):
# compared with Martins & Astudillo's algorithm instead.
COMPARED_WITH_KERAS = [n for n in NEW_IN_ISSUE_22 if n != "sparsemax"]
KWARGS = {"threshold": {"threshold": 0.3, "default_value": -1.0}}
VARIANTS = [("celu", {"alpha": 0.5}), ("glu", {"axis": 0}), ("hard_shrink", {"threshold": 1.0}),
            ("soft_shrink", {"threshold": 0.2}),
            ("squareplus", {"b": 1.0}), ("threshold", {"threshold": -1.0, "default_value": 2.0})]


def both(name, kwargs):
    ours = lambda x: activations.get(name)(x, **kwargs)
    theirs = lambda x: keras.activations.get(name)(x, **kwargs)
    return ours, theirs


def assert_same_values_and_gradients(ours, theirs):
    np.testing.assert_allclose(ours(X), theirs(X), rtol=1e-5, atol=1e-6)
    grad = lambda f: jax.grad(lambda x: weighted_sum(f(x)))(X)
    np.testing.assert_allclose(grad(ours), grad(theirs), rtol=1e-5, atol=1e-6)


def weighted_sum(y):
    """A scalar whose gradient weights every output differently."""
    return (y * jax.numpy.cos(jax.numpy.arange(y.size).reshape(y.shape))).sum()


@pytest.mark.parametrize("name", COMPARED_WITH_KERAS)
def test_activation_matches_keras(name):
    assert_same_values_and_gradients(*both(name, KWARGS.get(name, {})))


@pytest.mark.parametrize("name,kwargs", VARIANTS, ids=[f"{n}-{k}" for n, k in VARIANTS])
def test_activation_arguments_match_keras(name, kwargs):
    assert_same_values_and_gradients(*both(name, kwargs))


@pytest.mark.parametrize("name", NEW_IN_ISSUE_22)
def test_name_round_trip_as_keras(name):
    fn = getattr(activations, name)
    assert activations.get(name) is fn
    assert activations.serialize(fn) == keras.activations.serialize(
        getattr(keras.activations, name)) == name


def simplex_projection(z):
    """Martins & Astudillo (2016), Algorithm 1, one vector in float64."""
    ranked = np.sort(np.asarray(z, "float64"))[::-1]
    k = np.arange(1, z.size + 1)
    support = 1 + k * ranked > np.cumsum(ranked)
    return np.maximum(z - (np.cumsum(ranked)[support][-1] - 1) / k[support][-1], 0)


@pytest.mark.parametrize("axis", [-1, 0])
def test_sparsemax_activation_is_the_simplex_projection(axis):
    out = np.asarray(activations.get("sparsemax")(X, axis=axis))
    np.testing.assert_allclose(out, np.apply_along_axis(simplex_projection, axis, X),
                               rtol=1e-5, atol=1e-6)
