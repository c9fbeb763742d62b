"""quantile, percentile, nanquantile and nanpercentile with `q` a Python list or
tuple, against keras.ops (Keras 3 on JAX): every method, axes and keepdims,
eagerly, under jit, on symbolic inputs and under a GradientTape."""



import jax
import numpy as np
import pytest

import loopax
from loopax import ops

keras = pytest.importorskip("keras")

rng = np.random.default_rng(5)
Y = rng.normal(size=(3, 4, 5)).astype("float32")
X_NAN = Y.copy()
X_NAN[0, 1, 2] = np.nan
X_NAN[2, 0, :] = np.nan


def check(actual, expected, tol=1e-5):
    actual, expected = jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol, equal_nan=True)


QUANTILE_METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


QUANTILES = [("quantile", [0.1, 0.5, 0.9]), ("percentile", (10, 50, 90)),
             ("nanquantile", [0.25, 0.75]), ("nanpercentile", [25.0, 75.0])]


def _all_quantile_variants(fn, q, x):
    """`fn` (an op taking `q`) with every method, on axis 1, on axes (0, 2) with
    keepdims, and over all entries."""
    return ([fn(x, q, axis=1, method=method) for method in QUANTILE_METHODS]
            + [fn(x, q, axis=(0, 2), keepdims=True), fn(x, q)])


@pytest.mark.parametrize("name,q", QUANTILES, ids=[n for n, _ in QUANTILES])
def test_quantiles_take_a_python_list_or_tuple_as_keras(name, q):
    x = X_NAN if name.startswith("nan") else Y
    ours, theirs = getattr(ops, name), getattr(keras.ops, name)
    want = jax.jit(lambda x: _all_quantile_variants(theirs, q, x))(x)
    check(jax.jit(lambda x: _all_quantile_variants(ours, q, x))(x), want)
    check(ours(x, q, axis=1), want[0])   # eagerly
    # Called on symbolic inputs and recorded by a tape (paths that refused lists).
    inputs = loopax.Input((4, 5))
    assert ours(inputs, q, axis=-1).shape == (len(q), None, 4)
    if name == "quantile":
        v = loopax.Variable(x)
        with loopax.GradientTape() as tape:
            loss = ops.nansum(ours(v, q, axis=1, method="midpoint") ** 2)
        want = jax.jit(jax.grad(
            lambda v: keras.ops.nansum(theirs(v, q, axis=1, method="midpoint") ** 2)))(x)
        check(tape.gradient(loss, v), want)
