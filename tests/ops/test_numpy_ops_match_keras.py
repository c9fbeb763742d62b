"""The NaN-ignoring reductions and the other NumPy-named ops added for Keras 3
parity, against keras.ops (Keras 3 on JAX) on random inputs."""



import jax
import numpy as np
import pytest

import loopax
from loopax import ops

keras = pytest.importorskip("keras")

rng = np.random.default_rng(3)
X = rng.normal(size=(3, 4, 5)).astype("float32")
X_NAN = X.copy()
X_NAN[0, 1, 2] = np.nan
X_NAN[2, 0, :] = np.nan
Y = rng.normal(size=(3, 4, 5)).astype("float32")
I = rng.integers(-5, 20, size=(3, 4)).astype("int32")
J = rng.integers(1, 9, size=(3, 4)).astype("int32")
SPECIAL = np.array([1.0, -np.inf, np.inf, np.nan, 0.0], "float32")


def check(actual, expected, tol=1e-5):
    actual, expected = jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol, equal_nan=True)


NAN_REDUCTIONS = ["nanmax", "nanmin", "nansum", "nanprod", "nanmean", "nanmedian", "nanstd",
                  "nanvar", "nanargmax", "nanargmin"]
CASES = {
    **{f"{name}-axis-{axis}": (name, (X_NAN,), dict(axis=axis))
       for name in NAN_REDUCTIONS for axis in [None, 1]},
    **{f"{name}-axes-keepdims": (name, (X_NAN,), dict(axis=(0, 2), keepdims=True))
       for name in NAN_REDUCTIONS if not name.startswith("nanarg")},
    "nanmean-int": ("nanmean", (I,), {}),
    "nansum-int": ("nansum", (I,), dict(axis=0)),
    "nancumsum": ("nancumsum", (X_NAN,), dict(axis=1)),
    "nancumsum-flat": ("nancumsum", (X_NAN,), {}),
    "nancumprod": ("nancumprod", (X_NAN,), dict(axis=2)),
    "nanquantile": ("nanquantile", (X_NAN, np.array([0.1, 0.5], "float32")), dict(axis=2)),
    "nanpercentile": ("nanpercentile", (X_NAN, 30.0), dict(axis=1, method="nearest")),
    "percentile": ("percentile", (Y, np.array([10.0, 90.0], "float32")), dict(axis=0)),
    "percentile-keepdims": ("percentile", (Y, 50.0), dict(axis=1, keepdims=True)),
    "ptp": ("ptp", (Y,), dict(axis=1)),
    "ptp-int": ("ptp", (I,), {}),
    "fmax": ("fmax", (X_NAN, Y), {}),
    "fmin": ("fmin", (X_NAN, Y), {}),
    "fmod": ("fmod", (X, Y), {}),
    "fmod-int": ("fmod", (I, J), {}),
    "fabs": ("fabs", (X,), {}),
    "fabs-int": ("fabs", (I,), {}),
    "gcd": ("gcd", (I, J), {}),
    "lcm": ("lcm", (I, J), {}),
    "nextafter": ("nextafter", (X, Y), {}),
    "isneginf": ("isneginf", (SPECIAL,), {}),
    "isposinf": ("isposinf", (SPECIAL,), {}),
    "isreal": ("isreal", (X,), {}),
    "bitwise_invert": ("bitwise_invert", (I,), {}),
    "bitwise_left_shift": ("bitwise_left_shift", (I, J), {}),
    "bitwise_left_shift-python-int": ("bitwise_left_shift", (I, 2), {}),
    "bitwise_right_shift": ("bitwise_right_shift", (I, J), {}),
    "sinc": ("sinc", (X,), {}),
    "sinc-int": ("sinc", (I,), {}),
    "angle": ("angle", (X,), {}),
    "angle-int": ("angle", (I,), {}),
    "i0": ("i0", (X * 3,), {}),
    "i0-int": ("i0", (I,), {}),
    "logaddexp2": ("logaddexp2", (X, Y), {}),
    "logaddexp2-int": ("logaddexp2", (I, J), {}),
    "ldexp": ("ldexp", (X[0], J[0, :1]), {}),
    "allclose": ("allclose", (X, X + 1e-7), {}),
    "allclose-nan": ("allclose", (X_NAN, X_NAN), dict(equal_nan=True)),
    "isin": ("isin", (I, J), {}),
    "isin-invert": ("isin", (I, J), dict(invert=True)),
    "fliplr": ("fliplr", (X,), {}),
    "flipud": ("flipud", (X,), {}),
    "hsplit": ("hsplit", (X, 2), {}),
    "vsplit": ("vsplit", (X, [1]), {}),
    "dsplit": ("dsplit", (X, [1, 3]), {}),
    "dstack": ("dstack", ([I, J],), {}),
    "diagflat": ("diagflat", (I[0],), dict(k=1)),
    "diagflat-2d": ("diagflat", (I,), {}),
    "empty_like-shape": ("empty_like", (X,), {}),
    "empty_like-dtype": ("empty_like", (X,), dict(dtype="int32")),
    "geomspace": ("geomspace", (1.0, 1000.0), dict(num=7)),
    "geomspace-arrays": ("geomspace", (np.array([1.0, 2.0], "float32"),
                                       np.array([10.0, 200.0], "float32")),
                         dict(num=4, axis=1, endpoint=False)),
    "vander": ("vander", (X[0, 0],), {}),
    "vander-N-increasing": ("vander", (X[0, 0],), dict(N=3, increasing=True)),
    "trapezoid": ("trapezoid", (X,), {}),
    "trapezoid-x": ("trapezoid", (X, np.sort(Y[0, 0])), {}),
    "trapezoid-dx-axis0": ("trapezoid", (X,), dict(dx=0.5, axis=0)),
    "corrcoef": ("corrcoef", (X[0],), {}),
    "argpartition": ("argpartition", (X, 2), {}),
    "argpartition-flat": ("argpartition", (X, 3), dict(axis=None)),
    "unravel_index": ("unravel_index", (np.array([1, 7, 11]), (3, 4)), {}),
    "histogram": ("histogram", (Y.ravel(),), {}),
    "histogram-bins-range": ("histogram", (Y.ravel(),), dict(bins=4, range=(-1, 1))),
    "unique": ("unique", (I,), {}),
    "unique-all-outputs": ("unique", (I.ravel(),), dict(return_index=True, return_inverse=True,
                                                       return_counts=True)),
    "unique-size": ("unique", (I.ravel(),), dict(size=5, fill_value=-1)),
    "unique-axis": ("unique", (np.array([[1, 2], [1, 2], [0, 3]], "int32"),), dict(axis=0)),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_matches_keras(case):
    name, args, kwargs = CASES[case]
    check(getattr(ops, name)(*args, **kwargs), getattr(keras.ops, name)(*args, **kwargs))


def test_nan_reductions_and_elementwise_under_tape_and_jit():
    x = loopax.Variable(X_NAN)
    with loopax.GradientTape() as tape:
        loss = ops.nansum(ops.nanmean(x, axis=1) ** 2) + ops.sum(ops.fmax(x, 0.0))
    expected = jax.grad(lambda v: keras.ops.nansum(keras.ops.nanmean(v, axis=1) ** 2)
                        + keras.ops.sum(keras.ops.fmax(v, 0.0)))(X_NAN)
    check(tape.gradient(loss, x), expected)
    jitted = jax.jit(lambda v: (ops.nanmedian(v, axis=2), ops.percentile(v, 25.0),
                                ops.sinc(v), ops.trapezoid(v)))
    check(jitted(X), (keras.ops.nanmedian(X, axis=2), keras.ops.percentile(X, 25.0),
                      keras.ops.sinc(X), keras.ops.trapezoid(X)))


def test_unique_under_jit_needs_size():
    jitted = jax.jit(lambda v: ops.unique(v, size=6, fill_value=0))
    check(jitted(I.ravel()), keras.ops.unique(I.ravel(), size=6, fill_value=0))
    with pytest.raises(ValueError, match="unique: inside jax.jit .* pass `size`"):
        jax.jit(ops.unique)(I)


def test_bad_inputs():
    with pytest.raises(TypeError, match="ldexp: the exponent `x2` must be an integer"):
        ops.ldexp(X, Y)
