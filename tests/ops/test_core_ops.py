"""loopax.ops core: conversion, casting, slicing/scattering, control flow."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import ops
from loopax.src import tape as tape_module


def check(actual, expected, tol=1e-6):
    if isinstance(actual, (list, tuple)):  # one entry per source
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            check(a, e, tol)
        return
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


def GradientTape(**kwargs):
    return getattr(loopax, "GradientTape", tape_module.GradientTape)(**kwargs)


# --------------------------------------------------------------------------
# Conversion and dtypes
# --------------------------------------------------------------------------

def test_convert_to_tensor_dtypes_follow_keras():
    t = ops.convert_to_tensor(np.zeros(3, np.float64))
    assert isinstance(t, jax.Array) and t.dtype == jnp.float32
    assert ops.convert_to_tensor(np.zeros(3, np.int64)).dtype == jnp.int32
    assert ops.convert_to_tensor(1.5).dtype == jnp.float32
    assert ops.convert_to_tensor(2).dtype == jnp.int32
    assert ops.convert_to_tensor(True).dtype == jnp.bool_
    assert ops.convert_to_tensor([[1.0, 2.0]]).dtype == jnp.float32
    assert ops.convert_to_tensor([1, 2]).dtype == jnp.int32
    assert ops.convert_to_tensor(np.zeros(2, np.float16)).dtype == jnp.float16
    assert ops.convert_to_tensor([1, 2], dtype="float32").dtype == jnp.float32
    v = loopax.Variable([1.0, 2.0])
    check(ops.convert_to_tensor(v), [1.0, 2.0])
    assert isinstance(ops.convert_to_tensor(loopax.constant(3.0)), jax.Array)
    with pytest.raises(ValueError, match="sparse"):
        ops.convert_to_tensor([1.0], sparse=True)


def test_cast_and_dtype_helpers():
    assert ops.cast(np.array([1.7, -1.7]), "int32").dtype == jnp.int32
    check(ops.cast(np.array([1.7, -1.7]), "int32"), [1, -1])
    check(ops.cast(loopax.Variable(2), "float32"), 2.0)
    check(ops.saturate_cast(np.array([300.0, -5.0]), "uint8"), [255, 0])
    check(ops.saturate_cast(np.array([70000, -70000]), "int16"), [32767, -32768])
    assert ops.dtype(loopax.Variable(1.0)) == "float32"
    assert ops.dtype(np.zeros(2, "int8")) == "int8"
    assert ops.dtype(2) == "int32"
    assert ops.shape(loopax.Variable(np.zeros((2, 3)))) == (2, 3)
    assert ops.shape(3.0) == ()
    assert ops.is_tensor(jnp.zeros(2)) and ops.is_tensor(loopax.constant(1.0))
    assert not ops.is_tensor(np.zeros(2)) and not ops.is_tensor(loopax.Variable(1.0))
    assert isinstance(ops.convert_to_numpy(loopax.Variable(1.0)), np.ndarray)
    assert ops.is_float_dtype("bfloat16") and ops.is_int_dtype("int8")
    assert ops.standardize_dtype(np.float32) == "float32"
    assert ops.result_type("int32", "float32") == "float32"


def test_stop_gradient():
    grad = jax.grad(lambda x: ops.sum(x * ops.stop_gradient(x)))(jnp.array([1.0, 2.0]))
    check(grad, [1.0, 2.0])


# --------------------------------------------------------------------------
# Slicing and scattering
# --------------------------------------------------------------------------

def test_slice_and_slice_update():
    x = np.arange(12.0).reshape(3, 4)
    check(ops.slice(x, (1, 1), (2, 2)), x[1:3, 1:3])
    check(ops.slice(loopax.Variable(x), [0, 2], [3, 2]), x[:, 2:])
    updated = x.copy()
    updated[0:2, 1:3] = -1
    check(ops.slice_update(x, (0, 1), -np.ones((2, 2))), updated)
    # Start indices may be traced.
    f = jax.jit(lambda a, i: ops.slice(a, (i, 0), (1, 4)))
    check(f(x, 2), x[2:3])


def test_scatter_and_scatter_update():
    indices = np.array([[0, 1], [2, 0], [0, 1]])
    values = np.array([1.0, 2.0, 3.0])
    expected = np.zeros((3, 2))
    np.add.at(expected, (indices[:, 0], indices[:, 1]), values)
    check(ops.scatter(indices, values, (3, 2)), expected)  # duplicates accumulate
    x = np.ones((3, 2))
    check(ops.scatter_update(x, np.array([[1, 1], [2, 0]]), np.array([5.0, 6.0])),
          [[1, 1], [1, 5], [6, 1]])
    # Row updates: a partial index selects whole rows.
    check(ops.scatter_update(x, np.array([[0]]), np.array([[9.0, 8.0]])), [[9, 8], [1, 1], [1, 1]])


def test_unstack():
    x = np.arange(6.0).reshape(2, 3)
    parts = ops.unstack(x, axis=1)
    assert len(parts) == 3
    check(parts[2], x[:, 2])
    with pytest.raises(ValueError, match="num=2"):
        ops.unstack(x, num=2, axis=1)


# --------------------------------------------------------------------------
# Control flow without a tape: lax, eager and jitted
# --------------------------------------------------------------------------

def test_cond_and_switch():
    x = np.array([1.0, -2.0])
    check(ops.cond(True, lambda: x * 2, lambda: x), x * 2)
    check(ops.cond(np.array(False), lambda: x * 2, lambda: x), x)
    f = jax.jit(lambda a: ops.cond(ops.sum(a) > 0, lambda: a * 2, lambda: -a))
    check(f(x), -x)
    check(f(-x), -2 * x)
    branches = [lambda a: a, lambda a: a * 10, lambda a: -a]
    check(ops.switch(1, branches, x), x * 10)
    check(ops.switch(7, branches, x), -x)  # clamped to the last branch
    g = jax.jit(lambda i, a: ops.switch(i, branches, a))
    check(g(2, x), -x)
    check(g(-3, x), x)


def test_loops_match_python():
    check(ops.fori_loop(0, 10, lambda i, s: s + i, 0), 45)
    x = loopax.Variable(np.array([1.0, 2.0]))
    check(ops.fori_loop(0, 3, lambda i, v: v * 2, x), [8.0, 16.0])
    assert ops.while_loop(lambda i: i < 10, lambda i: i + 1, 0) == 10
    out = ops.while_loop(lambda a, b: a < 10, lambda a, b: (a + 1, b + 2), (0, 1))
    assert isinstance(out, tuple) and tuple(map(int, out)) == (10, 21)
    out = ops.while_loop(lambda a: a < 100, lambda a: a * 2, 1, maximum_iterations=3)
    assert int(out) == 8
    f = jax.jit(lambda n: ops.fori_loop(0, n, lambda i, s: s + i, 0))  # traced bound
    assert int(f(5)) == 10


def test_scan_map_vectorized_map():
    xs = np.arange(1.0, 5.0)
    carry, ys = ops.scan(lambda c, x: (c + x, c * x), 0.0, xs)
    assert float(carry) == 10.0
    check(ys, [0.0, 2.0, 9.0, 24.0])  # running sum before x, times x
    carry, ys = ops.scan(lambda c, x: (c + x, c), 0.0, xs, reverse=True)
    check(ys, [9.0, 7.0, 4.0, 0.0])
    carry, _ = ops.scan(lambda c, _: (c * 2, None), 1.0, length=5)
    assert float(carry) == 32.0
    check(ops.map(lambda r: ops.sum(r), np.ones((3, 2))), [2.0, 2.0, 2.0])
    m = np.arange(6.0).reshape(3, 2)
    check(ops.vectorized_map(lambda r: ops.dot(r, np.array([1.0, 10.0])), m), m @ [1.0, 10.0])
    check(ops.vectorized_map(lambda pair: pair[0] * pair[1], (m, m)), m * m)
    check(ops.associative_scan(lambda a, b: a + b, xs), np.cumsum(xs))
    check(ops.associative_scan(lambda a, b: a + b, m, axis=1), np.cumsum(m, axis=1))
    check(ops.associative_scan(lambda a, b: a + b, xs, reverse=True), np.cumsum(xs[::-1])[::-1])


# --------------------------------------------------------------------------
# Control flow under a recording tape: the taken ops are recorded
# --------------------------------------------------------------------------

def test_control_flow_under_a_tape_gives_true_gradients():
    x = loopax.constant(np.array([1.0, 2.0, 3.0]))
    w = loopax.Variable(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        by_cond = ops.cond(ops.sum(x) > 0, lambda: ops.sum(x * x), lambda: ops.sum(x))
        by_switch = ops.sum(ops.switch(1, [lambda a: a, lambda a: a * a * w], x))
        by_fori = ops.sum(ops.fori_loop(0, 3, lambda i, v: v * x, ops.ones_like(x)))
        by_while = ops.sum(ops.while_loop(lambda a: ops.sum(a) < 100, lambda a: a * 2, x))
        carry, ys = ops.scan(lambda c, xi: (c + xi * w, c * xi), 0.0, x)
        by_scan = carry + ops.sum(ys)
        by_vmap = ops.sum(ops.vectorized_map(lambda e: e * e * w, x))
        by_map = ops.sum(ops.map(lambda e: e * w, x))
        by_assoc = ops.sum(ops.associative_scan(lambda a, b: a * b, x))
    check(tape.gradient(by_cond, x), [2.0, 4.0, 6.0])
    check(tape.gradient(by_switch, [x, w]), [[4.0, 8.0, 12.0], 14.0])
    check(tape.gradient(by_fori, x), 3 * np.array([1.0, 2.0, 3.0]) ** 2)
    check(tape.gradient(by_while, x), [32.0, 32.0, 32.0])  # sum 6 doubled 5 times
    # carry = w * sum(x); ys = [0, w*x0*x1, w*(x0+x1)*x2]
    gx, gw = tape.gradient(by_scan, [x, w])
    check(gx, [2 + 2 * 2 + 2 * 3, 2 + 2 * 1 + 2 * 3, 2 + 2 * 3])
    check(gw, 6 + 1 * 2 + 3 * 3)
    check(tape.gradient(by_vmap, [x, w]), [[4.0, 8.0, 12.0], 14.0])
    check(tape.gradient(by_map, w), 6.0)
    # prefix products 1, 2, 6: d/dx of (x0 + x0 x1 + x0 x1 x2)
    check(tape.gradient(by_assoc, x), [1 + 2 + 6, 1 + 3, 2])


def test_traced_cond_under_a_tape_inside_jit():
    @jax.jit
    def gradient(value):
        x = loopax.constant(value)
        with GradientTape() as tape:
            tape.watch(x)
            y = ops.cond(ops.sum(x) > 0, lambda: ops.sum(x * x), lambda: ops.sum(x * 3.0))
        return tape.gradient(y, x)

    check(gradient(np.array([1.0, 2.0])), [2.0, 4.0])
    check(gradient(np.array([-1.0, -2.0])), [3.0, 3.0])


def test_data_dependent_loop_under_a_tape_inside_jit_is_refused():
    @jax.jit
    def gradient(value):
        x = loopax.constant(value)
        with GradientTape() as tape:
            tape.watch(x)
            y = ops.while_loop(lambda a: ops.sum(a) < 100, lambda a: a * 2, x)
        return tape.gradient(ops.sum(y), x)

    with pytest.raises(ValueError, match="while_loop.*GradientTape"):
        gradient(np.array([1.0, 2.0]))


def test_ops_with_eager_sizes_replay_under_a_tape():
    x = loopax.constant(np.array([1.0, 2.0, 3.0]))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        segments = ops.sum(ops.segment_sum(x * x, np.array([0, 0, 2])))
        counts = ops.sum(ops.bincount(np.array([0, 2, 2]), weights=x))
    check(tape.gradient(segments, x), [2.0, 4.0, 6.0])
    check(tape.gradient(counts, x), [1.0, 1.0, 1.0])
