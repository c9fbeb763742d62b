"""loopax.ops NumPy-named ops against NumPy itself."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopax
from loopax import ops

rng = np.random.default_rng(0)
X = rng.normal(size=(2, 3)).astype("float32")
Y = rng.normal(size=(2, 3)).astype("float32")
POS = np.abs(X) + 0.5
UNIT = np.clip(X / 4, -0.9, 0.9)


def check(actual, expected, tol=1e-5):
    assert isinstance(actual, (jax.Array, loopax.Tensor)), type(actual)
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


BINARY = [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("true_divide", np.true_divide), ("power", np.power),
    ("maximum", np.maximum), ("minimum", np.minimum), ("arctan2", np.arctan2),
    ("logaddexp", np.logaddexp), ("hypot", np.hypot),
]


def jit_each(fns, *args):
    """Runs every op once inside ONE jax.jit (one compile instead of one per op)."""
    return jax.jit(lambda *a: {name: fn(*a) for name, fn in fns.items()})(*args)


def test_binary_elementwise():
    a, b = POS, Y + 3
    fns = {name: (lambda p, q, n=name: getattr(ops, n)(p, q)) for name, _ in BINARY}
    got = jit_each(fns, a, b)
    for name, ref in BINARY:
        check(got[name], ref(a, b), tol=1e-4)


def test_binary_with_variables_tensors_and_scalars():
    a, b = X, Y + 3
    for name, ref in [("add", np.add), ("divide", np.divide), ("maximum", np.maximum)]:
        fn = getattr(ops, name)
        check(fn(loopax.Variable(a), b), ref(a, b))
        check(fn(a, loopax.Variable(b)), ref(a, b))
        check(fn(loopax.constant(a), b), ref(a, b))
        check(fn(a, 2.0), ref(a, np.float32(2.0)))
        check(fn(2, b), ref(np.float32(2), b))
        # Eagerly, Tensor or Variable in → Tensor out (as in TF); arrays in → arrays out.
        assert isinstance(fn(loopax.Variable(a), b), loopax.Tensor)
        assert isinstance(fn(a, b), jax.Array)


def test_integer_division_family():
    a, b = np.array([7, -7, 8]), np.array([2, 2, -3])
    check(ops.floor_divide(a, b), np.floor_divide(a, b))
    check(ops.mod(a, b), np.mod(a, b))
    assert ops.divide(a, b).dtype == jnp.float32  # ints divide to floats, as in Keras
    check(ops.divide_no_nan(np.array([1.0, 2.0]), np.array([0.0, 4.0])), [0.0, 0.5])


UNARY = [
    ("negative", np.negative, X), ("abs", np.abs, X), ("absolute", np.abs, X),
    ("square", np.square, X), ("sqrt", np.sqrt, POS), ("exp", np.exp, X),
    ("expm1", np.expm1, X), ("log", np.log, POS), ("log1p", np.log1p, POS),
    ("log2", np.log2, POS), ("log10", np.log10, POS), ("sin", np.sin, X),
    ("cos", np.cos, X), ("tan", np.tan, UNIT), ("tanh", np.tanh, X),
    ("arcsin", np.arcsin, UNIT), ("arccos", np.arccos, UNIT), ("arctan", np.arctan, X),
    ("sinh", np.sinh, X), ("cosh", np.cosh, X), ("arcsinh", np.arcsinh, X),
    ("arctanh", np.arctanh, UNIT), ("sign", np.sign, X), ("floor", np.floor, X * 3),
    ("ceil", np.ceil, X * 3), ("trunc", np.trunc, X * 3), ("reciprocal", np.reciprocal, POS),
    ("cbrt", np.cbrt, X), ("exp2", np.exp2, X),
]


def test_unary_elementwise():
    fns = {name: (lambda x, n=name: getattr(ops, n)(x)) for name, _, _ in UNARY}
    inputs = {id(x): x for _, _, x in UNARY}
    for x in inputs.values():
        got = jit_each({n: f for n, f in fns.items() if any(
            n == m and x is xm for m, _, xm in UNARY)}, x)
        for name, value in got.items():
            ref = next(r for m, r, _ in UNARY if m == name)
            check(value, ref(x), tol=1e-5)


def test_unary_with_variables_and_tensors():
    for name, ref, x in UNARY[:6]:
        check(getattr(ops, name)(loopax.Variable(x)), ref(x))
        check(getattr(ops, name)(loopax.constant(x)), ref(x))


def test_unary_python_scalars():
    check(ops.exp(1.0), np.e)
    check(ops.sqrt(4), 2.0)  # an int: sqrt gives a float, as in Keras
    assert ops.sqrt(4).dtype == jnp.float32
    check(ops.abs(-3), 3)


def test_round_clip_where_select():
    x = np.array([0.25, 1.5, -2.75, 3.14159])
    check(ops.round(x), np.round(x).astype("float32"))
    check(ops.round(x, 2), np.round(x, 2).astype("float32"), tol=1e-6)
    check(ops.clip(X, -0.5, 0.5), np.clip(X, -0.5, 0.5))
    check(ops.clip(loopax.Variable(X), -0.5, loopax.Variable(0.5)), np.clip(X, -0.5, 0.5))
    check(ops.where(X > 0, X, Y), np.where(X > 0, X, Y))
    check(ops.where(X > 0, 1.0, 0.0), (X > 0).astype("float32"))
    rows, cols = ops.where(np.array([[0, 1], [1, 0]]))
    check(rows, [0, 1])
    check(cols, [1, 0])
    check(ops.select([X < 0, X >= 0], [X * 0, X]), np.select([X < 0, X >= 0], [X * 0, X]))
    with pytest.raises(ValueError, match="both `x1` and `x2`"):
        ops.where(X > 0, X)


def test_comparisons_and_logic():
    a, b = np.array([1, 2, 3]), np.array([3, 2, 1])
    for name, ref in [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
                      ("less_equal", np.less_equal), ("greater", np.greater),
                      ("greater_equal", np.greater_equal)]:
        check(getattr(ops, name)(a, b), ref(a, b))
        check(getattr(ops, name)(loopax.Variable(a), 2), ref(a, 2))
    p, q = np.array([True, True, False]), np.array([True, False, False])
    check(ops.logical_and(p, q), p & q)
    check(ops.logical_or(p, q), p | q)
    check(ops.logical_xor(p, q), p ^ q)
    check(ops.logical_not(p), ~p)
    z = np.array([1.0, np.nan, np.inf, -np.inf])
    check(ops.isnan(z), np.isnan(z))
    check(ops.isinf(z), np.isinf(z))
    check(ops.isfinite(z), np.isfinite(z))
    check(ops.nan_to_num(z, posinf=5.0, neginf=-5.0), [1, 0, 5, -5])
    check(ops.isclose(np.array([1.0, 1.1]), 1.0), [True, False])


def test_products():
    a = rng.normal(size=(2, 3, 4)).astype("float32")
    b = rng.normal(size=(4, 5)).astype("float32")
    check(ops.matmul(a, b), a @ b)
    check(ops.matmul(loopax.Variable(a), b), a @ b)
    check(ops.dot(X, Y.T), X @ Y.T)
    check(ops.tensordot(a, b, axes=1), np.tensordot(a, b, axes=1))
    check(ops.tensordot(a, a, axes=([1, 2], [1, 2])), np.tensordot(a, a, axes=([1, 2], [1, 2])))
    check(ops.einsum("bij,jk->bik", a, b), np.einsum("bij,jk->bik", a, b))
    check(ops.einsum("ij,ij->i", loopax.Variable(X), Y), np.einsum("ij,ij->i", X, Y))
    check(ops.outer(X[0], Y[0]), np.outer(X[0], Y[0]))
    check(ops.vdot(X, Y), np.vdot(X, Y))
    check(ops.inner(X, Y), np.inner(X, Y))
    check(ops.kron(X, Y), np.kron(X, Y))
    check(ops.cross(X, Y), np.cross(X, Y))


def test_matmul_shape_error_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 5\)"):
        ops.matmul(np.ones((2, 3)), np.ones((4, 5)))


REDUCTIONS = ["sum", "mean", "prod", "max", "min", "std", "var", "any", "all",
              "argmax", "argmin", "median"]


def test_reductions():
    x = rng.normal(size=(3, 4)).astype("float32")
    fns = {}
    for name in REDUCTIONS:
        for axis in (None, 0, 1, -1):
            fns[(name, axis, False)] = (lambda a, n=name, ax=axis: getattr(ops, n)(a, axis=ax))
            if not name.startswith("arg"):
                fns[(name, axis, True)] = (lambda a, n=name, ax=axis: getattr(ops, n)(
                    a, axis=ax, keepdims=True))
    got = jax.jit(lambda a: [fn(a) for fn in fns.values()])(x)
    for (name, axis, keepdims), value in zip(fns, got):
        kwargs = {"keepdims": True} if keepdims else {}
        check(value, getattr(np, name)(x, axis=axis, **kwargs), tol=1e-5)
    check(ops.sum(loopax.Variable(x), axis=1), x.sum(axis=1))


def test_reduction_details():
    x = np.arange(24.0).reshape(2, 3, 4)
    check(ops.sum(x, axis=[0, 2]), x.sum(axis=(0, 2)))  # Keras accepts lists
    check(ops.mean(np.array([1, 2])), 1.5)  # integer mean is a float
    check(ops.max(np.zeros((0,)), initial=-1.0), -1.0)
    check(ops.cumsum(x, axis=1), np.cumsum(x, axis=1))
    check(ops.cumprod(x[:, :, :2] + 1, axis=2), np.cumprod(x[:, :, :2] + 1, axis=2))
    check(ops.cumsum(x), np.cumsum(x))
    check(ops.count_nonzero(np.array([[0, 1], [2, 0]]), axis=0), [1, 1])
    check(ops.average(x, axis=0, weights=np.array([1.0, 3.0])),
          np.average(x, axis=0, weights=[1.0, 3.0]))
    check(ops.quantile(x, 0.25, axis=-1), np.quantile(x, 0.25, axis=-1))
    check(ops.trace(x[0]), np.trace(x[0]))
    check(ops.amax(x), 23.0)


def test_shape_manipulation():
    x = np.arange(24.0).reshape(2, 3, 4)
    m = x[0]
    cases = {  # op call -> NumPy expectation
        "reshape": (lambda a: ops.reshape(a, (4, -1)), x.reshape(4, -1)),
        "transpose": (lambda a: ops.transpose(a), x.T),
        "transpose_axes": (lambda a: ops.transpose(a, (1, 0, 2)), x.transpose(1, 0, 2)),
        "moveaxis": (lambda a: ops.moveaxis(a, 0, -1), np.moveaxis(x, 0, -1)),
        "swapaxes": (lambda a: ops.swapaxes(a, 0, 2), np.swapaxes(x, 0, 2)),
        "expand_dims": (lambda a: ops.expand_dims(a, (0, -1)), x[None, ..., None]),
        "squeeze": (lambda a: ops.squeeze(a[:1, :, :1]), x[0, :, 0]),
        "squeeze_axis": (lambda a: ops.squeeze(a[:1, :, :1], axis=0), x[0, :, :1]),
        "ravel": (lambda a: ops.ravel(a), x.ravel()),
        "broadcast_to": (
            lambda a: ops.broadcast_to(a[0, 0], (3, 4)),
            np.broadcast_to(x[0, 0], (3, 4)),
        ),
        "concatenate": (lambda a: ops.concatenate([a, a], axis=1), np.concatenate([x, x], axis=1)),
        "stack": (lambda a: ops.stack([a[0], a[1]], axis=-1), np.stack([x[0], x[1]], axis=-1)),
        "hstack": (lambda a: ops.hstack([a[0], a[1]]), np.hstack([x[0], x[1]])),
        "vstack": (lambda a: ops.vstack([a[0], a[1]]), np.vstack([x[0], x[1]])),
        "append": (lambda a: ops.append(a[0], a[1], axis=0), np.append(x[0], x[1], axis=0)),
        "split": (lambda a: ops.split(a, 2, axis=2)[1], x[:, :, 2:]),
        "split_at": (lambda a: ops.split(a, [1], axis=1)[1], x[:, 1:]),
        "array_split": (lambda a: ops.array_split(a[0, 0], 3)[0], x[0, 0, :2]),
        "tile": (lambda a: ops.tile(a[0], (2, 1)), np.tile(m, (2, 1))),
        "repeat": (lambda a: ops.repeat(a[0], 2, axis=0), np.repeat(m, 2, axis=0)),
        "repeat_flat": (lambda a: ops.repeat(a[0], 2), np.repeat(m, 2)),
        "pad": (lambda a: ops.pad(a[0], ((1, 0), (0, 2))), np.pad(m, ((1, 0), (0, 2)))),
        "pad_value": (
            lambda a: ops.pad(a[0], 1, constant_values=7.0),
            np.pad(m, 1, constant_values=7.0),
        ),
        "pad_reflect": (lambda a: ops.pad(a[0], 1, mode="reflect"), np.pad(m, 1, mode="reflect")),
        "flip": (lambda a: ops.flip(a, axis=1), np.flip(x, axis=1)),
        "roll": (lambda a: ops.roll(a, 1, axis=2), np.roll(x, 1, axis=2)),
        "rot90": (lambda a: ops.rot90(a[0]), np.rot90(m)),
        "diag_make": (lambda a: ops.diag(a[0, 0]), np.diag(x[0, 0])),
        "diag_take": (lambda a: ops.diag(a[0], k=1), np.diag(m, k=1)),
        "diagonal": (lambda a: ops.diagonal(a, axis1=1, axis2=2), np.diagonal(x, axis1=1, axis2=2)),
        "triu": (lambda a: ops.triu(a[0], k=1), np.triu(m, k=1)),
        "tril": (lambda a: ops.tril(a[0]), np.tril(m)),
        "diff": (lambda a: ops.diff(a, axis=1), np.diff(x, axis=1)),
    }
    got = jit_each({k: f for k, (f, _) in cases.items()}, x)
    for name, (_, expected) in cases.items():
        assert got[name].shape == expected.shape, name
        check(got[name], expected)
    v = loopax.Variable(x)
    check(ops.reshape(v, (4, -1)), x.reshape(4, -1))
    check(ops.concatenate([x, v], axis=1), np.concatenate([x, x], axis=1))
    with pytest.raises(ValueError, match="constant_values"):
        ops.pad(x, 1, mode="edge", constant_values=1.0)


def test_indexing_and_sorting():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    idx = np.argsort(x, axis=1)
    cases = {
        "take": (lambda a: ops.take(a, np.array([2, 0]), axis=1), np.take(x, [2, 0], axis=1)),
        "take_flat": (lambda a: ops.take(a, np.array([4])), np.take(x, [4])),
        "take_along_axis": (lambda a: ops.take_along_axis(a, idx, axis=1),
                            np.take_along_axis(x, idx, axis=1)),
        "sort": (lambda a: ops.sort(a), np.sort(x)),
        "sort_axis0": (lambda a: ops.sort(a, axis=0), np.sort(x, axis=0)),
        "argsort": (lambda a: ops.argsort(a), np.argsort(x)),
        "searchsorted": (lambda a: ops.searchsorted(a[0, 1:], np.array([2.5, 0.0])), [2, 0]),
        "digitize": (lambda a: ops.digitize(a[0], np.array([1.5, 2.5])), [2, 0, 1]),
        "bincount_static": (lambda a: ops.bincount(np.array([0, 2]), minlength=3), [1, 0, 1]),
    }
    got = jit_each({k: f for k, (f, _) in cases.items()}, x)
    for name, (_, expected) in cases.items():
        check(got[name], expected)
    check(ops.get_item(loopax.Variable(x), (1, slice(1, None))), x[1, 1:])
    check(ops.bincount(np.array([0, 1, 1, 3])), [1, 2, 0, 1])
    check(ops.bincount(np.array([0, 1]), weights=np.array([0.5, 2.0]), minlength=3), [0.5, 2, 0])
    check(ops.bincount(np.array([[0, 1], [1, 1]])), [[1, 1], [0, 2]])
    check(ops.nonzero(np.array([0, 3, 0, 4]))[0], [1, 3])


def test_creation_dtypes_follow_keras():
    assert ops.zeros((2, 3)).dtype == jnp.float32
    assert ops.ones(3).shape == (3,)
    assert ops.zeros((2,), dtype="int32").dtype == jnp.int32
    assert ops.eye(3).dtype == jnp.float32
    check(ops.eye(2, 3, k=1), np.eye(2, 3, k=1))
    check(ops.identity(2), np.eye(2))
    check(ops.tri(3), np.tri(3))
    assert ops.arange(5).dtype == jnp.int32
    assert ops.arange(0.0, 1.0, 0.25).dtype == jnp.float32
    check(ops.arange(1, 7, 2), [1, 3, 5])
    check(ops.linspace(0, 1, 5), np.linspace(0, 1, 5))
    check(ops.logspace(0, 2, 3), [1, 10, 100], tol=1e-4)
    assert ops.full((2,), 3).dtype == jnp.int32
    assert ops.full((2,), 3.0).dtype == jnp.float32
    check(ops.full((2, 2), 1.5), np.full((2, 2), 1.5))
    check(ops.full((2,), loopax.Variable(2.0)), [2.0, 2.0])
    v = loopax.Variable(X)
    check(ops.zeros_like(v), np.zeros_like(X))
    check(ops.ones_like(v), np.ones_like(X))
    assert ops.ones_like(v, dtype="int32").dtype == jnp.int32
    check(ops.full_like(v, 7.0), np.full_like(X, 7.0))
    gx, gy = ops.meshgrid(np.arange(2), np.arange(3))
    ex, ey = np.meshgrid(np.arange(2), np.arange(3))
    check(gx, ex)
    check(gy, ey)
    assert ops.array([1.0, 2.0]).dtype == jnp.float32
    check(ops.copy(v), X)
    assert ops.ndim(v) == 2 and ops.size(v) == 6 and ops.ndim(3.0) == 0


def test_ops_work_under_jit_with_static_args():
    @jax.jit
    def f(x):
        return ops.sum(ops.reshape(ops.transpose(x), (-1, 2)), axis=0) + ops.mean(x, axis=[0, 1])

    x = np.arange(6.0).reshape(2, 3)
    check(f(x), x.T.reshape(-1, 2).sum(axis=0) + x.mean())


def test_gradients_through_ops():
    grad = jax.grad(lambda x: ops.sum(ops.square(ops.matmul(x, Y.T))))(X)
    check(grad, 2 * (X @ Y.T) @ Y, tol=1e-4)


def test_every_op_keeps_its_pure_function():
    for name in ["add", "mean", "reshape", "concatenate", "clip", "full", "einsum"]:
        fn = getattr(ops, name)
        assert callable(fn.__loopax_op__)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-100, 100, width=32, allow_subnormal=False), min_size=8, max_size=8),
       st.lists(st.floats(-100, 100, width=32, allow_subnormal=False), min_size=8, max_size=8))
def test_maximum_minimum_partition_the_pair(a, b):
    a, b = np.array(a, "float32"), np.array(b, "float32")  # one shape: one compile
    hi, lo = np.asarray(ops.maximum(a, b)), np.asarray(ops.minimum(a, b))
    np.testing.assert_array_equal(np.sort(np.stack([a, b]), axis=0), np.stack([lo, hi]))
