"""loopax.ops math and linalg against NumPy and closed forms."""

import math

import jax
import numpy as np
import pytest

import loopax
from loopax import ops

rng = np.random.default_rng(2)


def check(actual, expected, tol=1e-5):
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


def test_top_k_and_in_top_k():
    x = np.array([[1.0, 5.0, 3.0, 4.0], [9.0, 0.0, 2.0, 8.0]])
    values, indices = ops.top_k(loopax.Variable(x), 2)
    check(values, [[5.0, 4.0], [9.0, 8.0]])
    check(indices, [[1, 3], [0, 3]])
    check(ops.in_top_k(np.array([3, 2]), x, 2), [True, False])
    check(ops.in_top_k(np.array([0, 1]), x, 4), [True, True])
    with pytest.raises(ValueError, match="k=5"):
        ops.top_k(x, 5)


def test_logsumexp_and_special_functions():
    x = rng.normal(size=(2, 3)).astype("float32") * 50
    expected = np.log(np.sum(np.exp(x.astype("float64") - 100), axis=1)) + 100
    check(ops.logsumexp(x, axis=1), expected, tol=1e-4)
    check(ops.logsumexp(x - 1000.0), np.log(np.exp(x.astype("float64")).sum()) - 1000, tol=1e-3)
    check(ops.logsumexp(x, axis=[0, 1], keepdims=True).shape, (1, 1))
    grid = np.linspace(-2, 2, 9)
    check(ops.erf(grid), [math.erf(v) for v in grid])
    check(ops.erfinv(ops.erf(grid[1:-1])), grid[1:-1], tol=1e-4)
    check(ops.rsqrt(np.array([4.0, 0.25])), [0.5, 2.0])
    check(ops.rsqrt(4), 0.5)
    spd = np.array([[2.0, 0.5], [0.5, 1.0]])
    check(ops.logdet(spd), np.log(np.linalg.det(spd)))


def test_segment_reductions():
    data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    ids = np.array([0, 0, 2, 2])
    check(ops.segment_sum(data, ids), [[4, 6], [0, 0], [12, 14]])
    check(ops.segment_sum(data, ids, num_segments=4)[3], [0, 0])
    check(ops.segment_max(loopax.Variable(data), ids, sorted=True)[2], [7, 8])
    f = jax.jit(lambda d, i: ops.segment_sum(d, i, num_segments=3))
    check(f(data, ids)[0], [4, 6])
    with pytest.raises(ValueError, match="num_segments"):
        jax.jit(lambda d, i: ops.segment_sum(d, i))(data, ids)


def test_norm():
    x = rng.normal(size=(3, 4)).astype("float32")
    check(ops.norm(x), np.linalg.norm(x))
    check(ops.norm(x, axis=1), np.linalg.norm(x, axis=1))
    check(ops.norm(x, ord=1, axis=-1, keepdims=True), np.abs(x).sum(-1, keepdims=True))
    check(ops.norm(x, ord="fro"), np.linalg.norm(x, "fro"))
    check(ops.norm(x, ord=np.inf, axis=0), np.abs(x).max(0))
    check(ops.norm(np.array([3, 4])), 5.0)  # integers as floats


def test_linalg_decompositions_and_solves():
    a = rng.normal(size=(3, 3)).astype("float32")
    spd = (a @ a.T + 3 * np.eye(3)).astype("float32")
    b = rng.normal(size=(3, 2)).astype("float32")
    check(ops.inv(spd) @ spd, np.eye(3), tol=1e-4)
    check(ops.det(spd), np.linalg.det(spd), tol=1e-3)
    check(ops.solve(spd, b), np.linalg.solve(spd, b), tol=1e-4)
    lower = np.asarray(ops.cholesky(spd))
    check(lower @ lower.T, spd, tol=1e-4)
    check(np.triu(lower, 1), np.zeros((3, 3)))
    upper = np.asarray(ops.cholesky(spd, upper=True))
    check(upper, lower.T, tol=1e-5)
    check(ops.solve_triangular(lower, b, lower=True), np.linalg.solve(lower, b), tol=1e-4)
    q, r = ops.qr(a)
    check(np.asarray(q) @ np.asarray(r), a, tol=1e-4)
    u, s, vt = ops.svd(a)
    check(np.asarray(u) * np.asarray(s) @ np.asarray(vt), a, tol=1e-4)
    check(ops.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), tol=1e-4)
    w, v = ops.eigh(spd)
    check(np.asarray(v) @ np.diag(np.asarray(w)) @ np.asarray(v).T, spd, tol=1e-4)
    check(ops.lstsq(a, b), np.linalg.lstsq(a, b, rcond=None)[0], tol=1e-3)
    sign, logabs = ops.slogdet(spd)
    check(float(sign) * np.exp(float(logabs)), np.linalg.det(spd), tol=1e-3)
