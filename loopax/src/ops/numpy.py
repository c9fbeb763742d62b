"""NumPy-named ops (`keras.ops.numpy`): elementwise math, reductions,
shape manipulation, array creation and comparison.

Every op is a pure JAX function made a loopax op by `op`: it accepts NumPy
and JAX arrays, Python scalars, Variables and Tensors, returns a `jax.Array`
(a `Tensor` while a GradientTape records it), and takes its non-array
arguments (axis, shape, dtype, mode) as static Python values.

Dtypes follow Keras: creation ops default to `floatx()`, Python floats and
float64 NumPy arrays become float32, integer means and square roots are
float.
"""

from __future__ import annotations

import builtins
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import dtypes
from loopax.src.array_types import Array, ArrayLike, Axis, DTypeLike
from loopax.src.ops import linalg as _linalg
from loopax.src.ops import operators
from loopax.src.ops.utils import as_array, compiled
from loopax.src.ops.utils import axis_arg as _axis
from loopax.src.tensor import op, unwrap

_IMPORTED = set(globals())


def _dtype(dtype, default=None):
    if dtype is None:
        return None if default is None else dtypes.standardize(default)
    return dtypes.standardize(dtype)


def _python_scalar_dtype(value):
    """The dtype Keras gives a Python scalar or array-like fill value."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int32"
    if isinstance(value, float):
        return dtypes.floatx()
    if hasattr(value, "dtype"):
        return dtypes.standardize(value.dtype)
    return None


# --------------------------------------------------------------------------
# Elementwise, two arguments
# --------------------------------------------------------------------------

add = op(jnp.add)
subtract = op(jnp.subtract)
multiply = op(jnp.multiply)
divide = op(jnp.true_divide)
true_divide = op(jnp.true_divide)
floor_divide = op(jnp.floor_divide)
mod = op(jnp.mod)
power = op(jnp.power)
maximum = op(jnp.maximum)
minimum = op(jnp.minimum)
arctan2 = op(jnp.arctan2)
hypot = op(jnp.hypot)
logaddexp = op(jnp.logaddexp)
copysign = op(jnp.copysign)
heaviside = op(jnp.heaviside)

equal = op(jnp.equal)
not_equal = op(jnp.not_equal)
less = op(jnp.less)
less_equal = op(jnp.less_equal)
greater = op(jnp.greater)
greater_equal = op(jnp.greater_equal)
logical_and = op(jnp.logical_and)
logical_or = op(jnp.logical_or)
logical_xor = op(jnp.logical_xor)
bitwise_and = op(jnp.bitwise_and)
bitwise_or = op(jnp.bitwise_or)
bitwise_xor = op(jnp.bitwise_xor)
left_shift = op(jnp.left_shift)
right_shift = op(jnp.right_shift)


@op
@compiled()
def divide_no_nan(x1: ArrayLike, x2: ArrayLike) -> Array:
    """`x1 / x2`, with 0 where `x2 == 0`.

    Args:
        x1: Numerator.
        x2: Denominator (broadcast against `x1`).

    Returns:
        The quotients, 0 where `x2 == 0`.
    """
    safe = jnp.where(x2 == 0, 1, x2)
    return jnp.where(x2 == 0, 0, jnp.true_divide(x1, safe))


@op
@compiled("rtol", "atol", "equal_nan")
def isclose(x1: ArrayLike, x2: ArrayLike, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: bool = False) -> Array:
    """Whether `x1` and `x2` are equal within `atol + rtol * abs(x2)`, elementwise.

    Args:
        x1: First input array.
        x2: Second input array (broadcast against `x1`).
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        equal_nan: Count NaNs in the same place as equal.

    Returns:
        A bool array of the broadcast shape.
    """
    return jnp.isclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan)


# --------------------------------------------------------------------------
# Elementwise, one argument
# --------------------------------------------------------------------------

negative = op(jnp.negative)
abs = op(jnp.abs)
absolute = abs
square = op(jnp.square)
sqrt = op(jnp.sqrt)
cbrt = op(jnp.cbrt)
reciprocal = op(jnp.reciprocal)
exp = op(jnp.exp)
exp2 = op(jnp.exp2)
expm1 = op(jnp.expm1)
log = op(jnp.log)
log1p = op(jnp.log1p)
log2 = op(jnp.log2)
log10 = op(jnp.log10)
sin = op(jnp.sin)
cos = op(jnp.cos)
tan = op(jnp.tan)
arcsin = op(jnp.arcsin)
arccos = op(jnp.arccos)
arctan = op(jnp.arctan)
sinh = op(jnp.sinh)
cosh = op(jnp.cosh)
tanh = op(jnp.tanh)
arcsinh = op(jnp.arcsinh)
arccosh = op(jnp.arccosh)
arctanh = op(jnp.arctanh)
deg2rad = op(jnp.deg2rad)
rad2deg = op(jnp.rad2deg)
sign = op(jnp.sign)
signbit = op(jnp.signbit)
floor = op(jnp.floor)
ceil = op(jnp.ceil)
trunc = op(jnp.trunc)
isnan = op(jnp.isnan)
isinf = op(jnp.isinf)
isfinite = op(jnp.isfinite)
logical_not = op(jnp.logical_not)
bitwise_not = op(jnp.bitwise_not)
real = op(jnp.real)
imag = op(jnp.imag)
conj = op(jnp.conjugate)
conjugate = conj


@op
@compiled("decimals")
def round(x: ArrayLike, decimals: int = 0) -> Array:
    """`x` rounded to `decimals` decimals (halves to even, as NumPy).

    Args:
        x: Input array.
        decimals: Number of decimals (negative: tens, hundreds, ...).

    Returns:
        An array of `x`'s shape and dtype.
    """
    return jnp.round(x, decimals)


@op
@compiled()
def clip(x: ArrayLike, x_min: ArrayLike, x_max: ArrayLike) -> Array:
    """Limits `x` to `[x_min, x_max]`.

    Args:
        x: Input array.
        x_min: Lower bound (scalar or broadcastable array).
        x_max: Upper bound.

    Returns:
        `x` clipped, same shape.
    """
    return jnp.clip(x, x_min, x_max)


@op
@compiled("nan", "posinf", "neginf")
def nan_to_num(x: ArrayLike, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Array:
    """`x` with NaN and infinities replaced by finite numbers.

    Args:
        x: Input array.
        nan: The value for NaN.
        posinf: The value for +inf (default the dtype's largest).
        neginf: The value for -inf (default the dtype's lowest).

    Returns:
        An array of `x`'s shape and dtype.
    """
    return jnp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def where(condition: ArrayLike, x1: ArrayLike = None, x2: ArrayLike = None) -> Any:
    """`x1` where `condition`, else `x2`; with neither, the indices of the
    nonzero entries (eager only, as `nonzero`).

    Args:
        condition: A bool array.
        x1: Values where `condition` is true.
        x2: Values where it is false.

    Returns:
        An array of the broadcast shape; with neither `x1` nor `x2`, a tuple of index arrays, one
        per axis.

    Raises:
        ValueError: only one of `x1` and `x2` is given.
    """
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise ValueError("where: give both `x1` and `x2`, or neither.")
    return _where(condition, x1, x2)


_where = op(compiled()(jnp.where))


@op
@compiled()
def select(condlist: Sequence[ArrayLike], choicelist: Sequence[ArrayLike],
           default: ArrayLike = 0) -> Array:
    """For each entry, the value from the first `choicelist` array whose condition holds.

    Args:
        condlist: A list of bool arrays.
        choicelist: A list of arrays, one per condition.
        default: The value where no condition holds.

    Returns:
        An array of the broadcast shape.
    """
    return jnp.select(list(condlist), list(choicelist), default)


# --------------------------------------------------------------------------
# Products
# --------------------------------------------------------------------------

@op
@compiled()
def matmul(x1: ArrayLike, x2: ArrayLike) -> Array:
    """Matrix product with NumPy broadcasting: (..., n, k) @ (..., k, m).

    Args:
        x1: Array `(..., n, k)` (or 1-D `(k,)`).
        x2: Array `(..., k, m)` (or 1-D `(k,)`).

    Returns:
        The product, `(..., n, m)`.

    Raises:
        ValueError: the contracted axes differ in size.
    """
    a, b = jnp.shape(x1), jnp.shape(x2)
    if a and b:
        inner_b = b[-2] if len(b) >= 2 else b[0]
        if a[-1] != inner_b:
            where_b = "second-to-last" if len(b) >= 2 else "only"
            raise ValueError(
                f"matmul: x1 has shape {a} and x2 has shape {b}; the last axis of "
                f"x1 ({a[-1]}) must equal the {where_b} axis of x2 ({inner_b}).")
    return jnp.matmul(x1, x2)


dot = op(compiled()(jnp.dot))
vdot = op(compiled()(jnp.vdot))
inner = op(compiled()(jnp.inner))
outer = op(compiled()(jnp.outer))
kron = op(compiled()(jnp.kron))


@op
@compiled("axes")
def tensordot(x1: ArrayLike, x2: ArrayLike, axes: Any = 2) -> Array:
    """The sum of products over the given axes of `x1` and `x2`.

    Args:
        x1: First input array.
        x2: Second input array (broadcast against `x1`).
        axes: An int N (last N axes of `x1` with first N of `x2`) or a pair of axis lists.

    Returns:
        The contracted array.
    """
    return jnp.tensordot(x1, x2, axes=axes)


@op
@compiled("subscripts", "optimize", "precision", "preferred_element_type")
def einsum(subscripts: str, *operands: ArrayLike, **kwargs: Any) -> Array:
    """Einstein summation: `einsum("ij,jk->ik", a, b)`.

    Args:
        subscripts: The contraction, e.g. `"ij,jk->ik"`.
        *operands: The arrays.
        **kwargs: `optimize`, `precision`, `preferred_element_type`, as `jnp.einsum`.

    Returns:
        The result array.
    """
    return jnp.einsum(subscripts, *operands, **kwargs)


@op
@compiled("axisa", "axisb", "axisc", "axis")
def cross(x1: ArrayLike, x2: ArrayLike, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: Axis = None) -> Array:
    """The cross product of 3-vectors (or 2-vectors) along the given axes.

    Args:
        x1: First input array.
        x2: Second input array (broadcast against `x1`).
        axisa: The vector axis of `x1`.
        axisb: The vector axis of `x2`.
        axisc: The vector axis of the result.
        axis: If given, overrides all three.

    Returns:
        The cross products.
    """
    return jnp.cross(x1, x2, axisa=axisa, axisb=axisb, axisc=axisc, axis=axis)


@op
@compiled("mode")
def correlate(x1: ArrayLike, x2: ArrayLike, mode: str = "valid") -> Array:
    """The cross-correlation of two 1-D arrays.

    Args:
        x1: 1-D array.
        x2: 1-D array.
        mode: `"valid"`, `"same"` or `"full"`, as `np.correlate`.

    Returns:
        A 1-D array.
    """
    return jnp.correlate(x1, x2, mode=mode)


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------

@op
@compiled("axis", "keepdims")
def sum(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """The sum of the entries along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The sums.
    """
    return jnp.sum(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def mean(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """Mean over `axis` (all axes by default); integer inputs give floats.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The means, a float array.
    """
    return jnp.mean(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims", "dtype")
def prod(x: ArrayLike, axis: Axis = None, keepdims: bool = False, dtype: DTypeLike = None) -> Array:
    """The product of the entries along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.
        dtype: The output dtype (default the input's).

    Returns:
        The products.
    """
    return jnp.prod(x, axis=_axis(axis), keepdims=keepdims, dtype=_dtype(dtype))


@op
@compiled("axis", "keepdims", "initial")
def max(x: ArrayLike, axis: Axis = None, keepdims: bool = False, initial: Any = None) -> Array:
    """The maximum along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.
        initial: A lower bound included in the maximum (lets empty reductions succeed).

    Returns:
        The maxima, `x`'s dtype.
    """
    return jnp.max(x, axis=_axis(axis), keepdims=keepdims, initial=initial)


@op
@compiled("axis", "keepdims", "initial")
def min(x: ArrayLike, axis: Axis = None, keepdims: bool = False, initial: Any = None) -> Array:
    """The minimum along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.
        initial: An upper bound included in the minimum.

    Returns:
        The minima, `x`'s dtype.
    """
    return jnp.min(x, axis=_axis(axis), keepdims=keepdims, initial=initial)


amax = max
amin = min


@op
@compiled("axis", "keepdims")
def argmax(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """The index of the largest entry along `axis` (the first one on ties).

    Args:
        x: Input array.
        axis: The axis to search; None searches the flattened array.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        An int32 array of indices.
    """
    return jnp.argmax(x, axis=axis, keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def argmin(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """The index of the smallest entry along `axis` (the first one on ties).

    Args:
        x: Input array.
        axis: The axis to search; None searches the flattened array.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        An int32 array of indices.
    """
    return jnp.argmin(x, axis=axis, keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def any(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """Whether any entry is true (nonzero) along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        A bool array.
    """
    return jnp.any(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def all(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """Whether all entries are true (nonzero) along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        A bool array.
    """
    return jnp.all(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def std(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """Population standard deviation (ddof=0).

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The standard deviations, a float array.
    """
    return jnp.std(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def var(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """Population variance (ddof=0).

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The variances, a float array.
    """
    return jnp.var(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis")
def average(x: ArrayLike, axis: Axis = None, weights: ArrayLike = None) -> Array:
    """The weighted mean along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        weights: Weights of `x`'s shape (or 1-D along `axis`); None gives the plain mean.

    Returns:
        The averages, a float array.
    """
    return jnp.average(x, axis=_axis(axis), weights=weights)


@op
@compiled("axis", "keepdims")
def median(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """The median along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The medians, a float array.
    """
    return jnp.median(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "method", "keepdims")
def quantile(x: ArrayLike, q: ArrayLike, axis: Axis = None, method: str = "linear",
             keepdims: bool = False) -> Array:
    """The `q`-th quantiles of `x` along `axis`.

    Args:
        x: Input array.
        q: Quantile(s) in [0, 1]: a scalar, or a 1-D array, list or tuple.
        axis: Axis or axes to reduce; None reduces all.
        method: How to interpolate between entries: `"linear"`, `"lower"`, `"higher"`, `"midpoint"`
            or `"nearest"`.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The quantiles; a leading axis of `q`'s size when `q` is 1-D.
    """
    q = jnp.asarray(q)   # a list or tuple of quantiles too, as Keras takes
    return jnp.quantile(x, q, axis=_axis(axis), method=method, keepdims=keepdims)


@op
@compiled("axis")
def count_nonzero(x: ArrayLike, axis: Axis = None) -> Array:
    """The number of nonzero entries along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.

    Returns:
        An int array of counts.
    """
    return jnp.count_nonzero(x, axis=_axis(axis))


@op
@compiled("axis", "dtype")
def cumsum(x: ArrayLike, axis: Axis = None, dtype: DTypeLike = None) -> Array:
    """The cumulative sum along `axis`.

    Args:
        x: Input array.
        axis: The axis; None works on the flattened array.
        dtype: The output dtype (default the input's).

    Returns:
        An array of `x`'s shape (1-D when `axis` is None).
    """
    return jnp.cumsum(x, axis=axis, dtype=_dtype(dtype))


@op
@compiled("axis", "dtype")
def cumprod(x: ArrayLike, axis: Axis = None, dtype: DTypeLike = None) -> Array:
    """The cumulative product along `axis`.

    Args:
        x: Input array.
        axis: The axis; None works on the flattened array.
        dtype: The output dtype (default the input's).

    Returns:
        An array of `x`'s shape (1-D when `axis` is None).
    """
    return jnp.cumprod(x, axis=axis, dtype=_dtype(dtype))


@op
@compiled("offset", "axis1", "axis2")
def trace(x: ArrayLike, offset: ArrayLike = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The sum along a diagonal of `x`.

    Args:
        x: Input array.
        offset: Diagonal offset (0 the main diagonal).
        axis1: First axis of the 2-D sub-arrays.
        axis2: Second axis of the 2-D sub-arrays.

    Returns:
        `x`'s shape without `axis1` and `axis2`.
    """
    return jnp.trace(x, offset=offset, axis1=axis1, axis2=axis2)


# --------------------------------------------------------------------------
# Shape manipulation
# --------------------------------------------------------------------------

@op
@compiled("newshape")
def reshape(x: ArrayLike, newshape: Sequence[int] | int) -> Array:
    """`x` with a new shape and the same entries.

    Args:
        x: Input array.
        newshape: The new shape; one entry may be -1 (inferred).

    Returns:
        The reshaped array.
    """
    return jnp.reshape(x, newshape)


@op
@compiled("axes")
def transpose(x: ArrayLike, axes: Any = None) -> Array:
    """`x` with its axes permuted.

    Args:
        x: Input array.
        axes: The new order of the axes (default: reversed).

    Returns:
        The transposed array.
    """
    return jnp.transpose(x, axes)


@op
@compiled("source", "destination")
def moveaxis(x: ArrayLike, source: int | Sequence[int], destination: int | Sequence[int]) -> Array:
    """`x` with axes moved to new positions (the others keep their order).

    Args:
        x: Input array.
        source: Axis or axes to move.
        destination: Their new positions.

    Returns:
        The rearranged array.
    """
    return jnp.moveaxis(x, source, destination)


@op
@compiled("axis1", "axis2")
def swapaxes(x: ArrayLike, axis1: int, axis2: int) -> Array:
    """`x` with two axes exchanged.

    Args:
        x: Input array.
        axis1: First axis.
        axis2: Second axis.

    Returns:
        The rearranged array.
    """
    return jnp.swapaxes(x, axis1, axis2)


@op
@compiled("axis")
def expand_dims(x: ArrayLike, axis: Axis) -> Array:
    """`x` with a new axis of size 1 at `axis`.

    Args:
        x: Input array.
        axis: Position(s) of the new axis (axes) in the result.

    Returns:
        An array of rank `x.ndim + 1` (or more).
    """
    return jnp.expand_dims(x, _axis(axis))


@op
@compiled("axis")
def squeeze(x: ArrayLike, axis: Axis = None) -> Array:
    """`x` without axes of size 1.

    Args:
        x: Input array.
        axis: Axis or axes to remove (each of size 1); None removes all size-1 axes.

    Returns:
        The squeezed array.
    """
    return jnp.squeeze(x, _axis(axis))


@op
@compiled()
def ravel(x: ArrayLike) -> Array:
    """`x` flattened to 1-D (row-major).

    Args:
        x: Input array.

    Returns:
        A 1-D array of `x.size` entries.
    """
    return jnp.ravel(x)


@op
@compiled("shape")
def broadcast_to(x: ArrayLike, shape: Sequence[int] | int) -> Array:
    """`x` broadcast to `shape`.

    Args:
        x: Input array.
        shape: The target shape.

    Returns:
        An array of `shape`.
    """
    return jnp.broadcast_to(x, tuple(shape))


@op
@compiled("axis")
def concatenate(xs: Sequence[ArrayLike], axis: Axis = 0) -> Array:
    """Joins a sequence of arrays along an existing `axis`.

    Args:
        xs: Arrays with equal shapes except along `axis`.
        axis: The axis to join along.

    Returns:
        The joined array.
    """
    return jnp.concatenate(xs, axis=axis)


@op
@compiled("axis")
def stack(x: Sequence[ArrayLike], axis: Axis = 0) -> Array:
    """Joins a sequence of same-shape arrays along a new `axis`.

    Args:
        x: A sequence of arrays of one shape.
        axis: Position of the new axis in the result.

    Returns:
        An array with one more axis, of size `len(x)`.
    """
    return jnp.stack(x, axis=axis)


@op
@compiled()
def hstack(xs: Sequence[ArrayLike]) -> Array:
    """Joins arrays horizontally (along axis 1; axis 0 for 1-D arrays).

    Args:
        xs: A sequence of arrays.

    Returns:
        The joined array.
    """
    return jnp.hstack(xs)


@op
@compiled()
def vstack(xs: Sequence[ArrayLike]) -> Array:
    """Joins arrays vertically (along axis 0, 1-D arrays as rows).

    Args:
        xs: A sequence of arrays.

    Returns:
        The joined array.
    """
    return jnp.vstack(xs)


@op
@compiled("axis")
def append(x1: ArrayLike, x2: ArrayLike, axis: Axis = None) -> Array:
    """`x2` appended to `x1` along `axis`.

    Args:
        x1: First input array.
        x2: Second input array (broadcast against `x1`).
        axis: The axis; None flattens both first.

    Returns:
        The joined array.
    """
    return jnp.append(x1, x2, axis=axis)


@op
@compiled("indices_or_sections", "axis")
def split(x: ArrayLike, indices_or_sections: int | Sequence[int], axis: Axis = 0) -> list[Array]:
    """A list of sub-arrays: `indices_or_sections` equal parts, or cut at
    the given indices.

    Args:
        x: Input array.
        indices_or_sections: The number of equal parts, or the indices to cut at.
        axis: The axis to split.

    Returns:
        A list of arrays.
    """
    return jnp.split(x, indices_or_sections, axis=axis)


@op
@compiled("indices_or_sections", "axis")
def array_split(x: ArrayLike, indices_or_sections: int | Sequence[int],
                axis: Axis = 0) -> list[Array]:
    """Like `split`, but `indices_or_sections` need not divide the axis evenly.

    Args:
        x: Input array.
        indices_or_sections: The number of equal parts, or the indices to cut at.
        axis: The axis to split.

    Returns:
        A list of arrays (the first ones one longer when the split is uneven).
    """
    return jnp.array_split(x, indices_or_sections, axis=axis)


@op
@compiled("repeats")
def tile(x: ArrayLike, repeats: Any) -> Array:
    """`x` repeated `repeats` times along each axis.

    Args:
        x: Input array.
        repeats: Repetitions per axis (an int for the last axis).

    Returns:
        The tiled array.
    """
    return jnp.tile(x, repeats)


@op
def repeat(x: ArrayLike, repeats: Any, axis: Axis = None) -> Array:
    """Each entry repeated `repeats` times (an int, or one count per entry).

    Args:
        x: Input array.
        repeats: An int, or one count per entry along `axis` (array counts work eagerly only).
        axis: The axis; None flattens `x` first.

    Returns:
        The array with repeated entries.
    """
    if isinstance(repeats, (int, np.integer, list, tuple)):
        return _repeat(x, repeats, axis)
    return jnp.repeat(x, repeats, axis=axis)  # array counts: eager only


@compiled("repeats", "axis")
def _repeat(x, repeats, axis):
    return jnp.repeat(x, repeats, axis=axis)


@op
@compiled("pad_width", "mode")
def pad(x: ArrayLike, pad_width: Any, mode: str = "constant",
        constant_values: ArrayLike = None) -> Array:
    """Pads `x`; `pad_width` is `((before, after), ...)` per axis (or one
    pair / one int for all).

    Args:
        x: Input array.
        pad_width: `((before, after), ...)` per axis, one pair, or one int.
        mode: `"constant"`, `"edge"`, `"reflect"`, `"symmetric"`, ... as `np.pad`.
        constant_values: The fill value for `mode="constant"` (default 0).

    Returns:
        The padded array.

    Raises:
        ValueError: `constant_values` is given with a mode other than `"constant"`.
    """
    if constant_values is not None:
        if mode != "constant":
            raise ValueError(
                f"pad: `constant_values` only applies to mode='constant', got mode={mode!r}.")
        return jnp.pad(x, pad_width, mode=mode, constant_values=constant_values)
    return jnp.pad(x, pad_width, mode=mode)


@op
@compiled("axis")
def flip(x: ArrayLike, axis: Axis = None) -> Array:
    """`x` with the order of entries reversed along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reverse; None reverses all.

    Returns:
        An array of `x`'s shape.
    """
    return jnp.flip(x, axis=_axis(axis))


@op
@compiled("shift", "axis")
def roll(x: ArrayLike, shift: ArrayLike, axis: Axis = None) -> Array:
    """`x` shifted cyclically by `shift` along `axis`.

    Args:
        x: Input array.
        shift: The shift (int or one per axis).
        axis: Axis or axes; None rolls the flattened array.

    Returns:
        An array of `x`'s shape.
    """
    return jnp.roll(x, shift, axis=_axis(axis))


@op
@compiled("k", "axes")
def rot90(array: ArrayLike, k: int = 1, axes: Any = (0, 1)) -> Array:
    """`array` rotated by 90 degrees `k` times in the plane of `axes`.

    Args:
        array: Input array.
        k: Number of quarter turns (counterclockwise).
        axes: The two axes of the plane.

    Returns:
        The rotated array.
    """
    return jnp.rot90(array, k=k, axes=tuple(axes))


@op
@compiled("k")
def diag(x: ArrayLike, k: int = 0) -> Array:
    """The diagonal `k` of a 2-D `x`, or a 2-D array with 1-D `x` on diagonal `k`.

    Args:
        x: A 1-D or 2-D array.
        k: Diagonal offset: 0 the main diagonal, > 0 above, < 0 below.

    Returns:
        A 1-D or 2-D array.
    """
    return jnp.diag(x, k=k)


@op
@compiled("offset", "axis1", "axis2")
def diagonal(x: ArrayLike, offset: ArrayLike = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The diagonal of the 2-D sub-arrays of `x` in the plane `(axis1, axis2)`.

    Args:
        x: Input array.
        offset: Diagonal offset (0 the main diagonal).
        axis1: First axis.
        axis2: Second axis.

    Returns:
        `x`'s shape without the two axes, plus the diagonal's length last.
    """
    return jnp.diagonal(x, offset=offset, axis1=axis1, axis2=axis2)


@op
@compiled("k")
def triu(x: ArrayLike, k: int = 0) -> Array:
    """`x` with the entries below diagonal `k` set to 0.

    Args:
        x: Input array.
        k: Diagonal offset: 0 the main diagonal, > 0 above, < 0 below.

    Returns:
        An array of `x`'s shape.
    """
    return jnp.triu(x, k=k)


@op
@compiled("k")
def tril(x: ArrayLike, k: int = 0) -> Array:
    """`x` with the entries above diagonal `k` set to 0.

    Args:
        x: Input array.
        k: Diagonal offset: 0 the main diagonal, > 0 above, < 0 below.

    Returns:
        An array of `x`'s shape.
    """
    return jnp.tril(x, k=k)


@op
@compiled("n", "axis")
def diff(a: ArrayLike, n: int = 1, axis: Axis = -1) -> Array:
    """The `n`-th discrete difference along `axis` (`a[i + 1] - a[i]`).

    Args:
        a: Input array.
        n: How many times to difference.
        axis: The axis.

    Returns:
        An array `n` shorter along `axis`.
    """
    return jnp.diff(a, n=n, axis=axis)


# --------------------------------------------------------------------------
# Indexing, sorting, searching
# --------------------------------------------------------------------------

@op
@compiled("axis")
def take(x: ArrayLike, indices: ArrayLike, axis: Axis = None) -> Array:
    """Entries of `x` at `indices` along `axis` (of the flattened `x` if None).

    Args:
        x: Input array.
        indices: Integer indices.
        axis: The axis to take along; None uses the flattened `x`.

    Returns:
        The gathered entries.
    """
    return jnp.take(x, jnp.asarray(indices), axis=axis)


@op
@compiled("axis")
def take_along_axis(x: ArrayLike, indices: ArrayLike, axis: Axis = None) -> Array:
    """Entries of `x` at `indices`, matched along `axis` (as `np.take_along_axis`).

    Args:
        x: Input array.
        indices: Integer array of `x`'s rank.
        axis: The axis; None uses the flattened `x`.

    Returns:
        An array of `indices`' shape.
    """
    return jnp.take_along_axis(x, jnp.asarray(indices), axis=axis)


def get_item(x: ArrayLike, key: Any) -> Array:
    """`x[key]`.

    Args:
        x: Input array.
        key: An index: int, slice, array, tuple of them, `None`, `...`.

    Returns:
        The selected entries.
    """
    return operators.getitem(x, key)


@op
@compiled("axis")
def sort(x: ArrayLike, axis: Axis = -1) -> Array:
    """`x` sorted along `axis`, ascending.

    Args:
        x: Input array.
        axis: The axis.

    Returns:
        An array of `x`'s shape.
    """
    return jnp.sort(x, axis=axis)


@op
@compiled("axis")
def argsort(x: ArrayLike, axis: Axis = -1) -> Array:
    """The indices that sort `x` along `axis`, ascending (stable).

    Args:
        x: Input array.
        axis: The axis.

    Returns:
        An int32 array of `x`'s shape.
    """
    return jnp.argsort(x, axis=axis)


@op
@compiled("side")
def searchsorted(sorted_sequence: ArrayLike, values: ArrayLike, side: str = "left") -> Array:
    """Where `values` would be inserted in `sorted_sequence` to keep it sorted.

    Args:
        sorted_sequence: A sorted 1-D array.
        values: The values to place.
        side: `"left"` (first suitable index) or `"right"` (last).

    Returns:
        An int array of `values`' shape.
    """
    return jnp.searchsorted(sorted_sequence, values, side=side)


@op
@compiled()
def digitize(x: ArrayLike, bins: ArrayLike) -> Array:
    """The index of the bin each entry of `x` falls in.

    Args:
        x: Input array.
        bins: A monotonic 1-D array of bin edges.

    Returns:
        An int array of `x`'s shape.
    """
    return jnp.digitize(x, bins)


def nonzero(x: ArrayLike) -> tuple[Array, ...]:
    """Indices of the nonzero entries, one array per axis. Eager only (the
    output size depends on the values); integer results, so not recorded.

    Args:
        x: Input array.

    Returns:
        A tuple of int arrays, one per axis of `x`.
    """
    return jnp.nonzero(unwrap(x))


def bincount(x: ArrayLike, weights: ArrayLike = None, minlength: int = 0,
             sparse: bool = False) -> Array:
    """Counts of each value in non-negative integer `x` (per row if 2-D),
    weighted by `weights` if given.

    The output length is `max(minlength, x.max() + 1)`, read from `x`
    eagerly; inside `jax.jit` it must be static, so it is `minlength` there
    (larger values are dropped).

    Args:
        x: Non-negative integers, 1-D or 2-D.
        weights: Weights of `x`'s shape (None counts 1 each).
        minlength: The smallest output length.
        sparse: Must be False: loopax has no sparse tensors.

    Returns:
        Counts (or summed weights): `(length,)`, or `(rows, length)` for 2-D `x`.

    Raises:
        ValueError: `sparse=True`, or `x` is not 1-D or 2-D.
    """
    if sparse:
        raise ValueError("bincount: loopax has no sparse tensors; use sparse=False.")
    values = as_array(unwrap(x))
    if isinstance(values, jax.core.Tracer):
        length = minlength
    else:
        length = builtins.max(minlength, int(jnp.max(values)) + 1 if values.size else 0)
    return _bincount(x, weights, length)


@op
@compiled("length")
def _bincount(x, weights, length):
    def count(row, w):
        return jnp.bincount(row, weights=w, length=length)

    if jnp.ndim(x) == 1:
        return count(x, weights)
    if jnp.ndim(x) != 2:
        raise ValueError(f"bincount: x must be 1-D or 2-D, got shape {jnp.shape(x)}.")
    if weights is None:
        return jax.vmap(lambda row: count(row, None))(x)
    return jax.vmap(count)(x, weights)


# --------------------------------------------------------------------------
# Creation
# --------------------------------------------------------------------------

def arange(start: ArrayLike, stop: ArrayLike = None, step: ArrayLike = 1,
           dtype: DTypeLike = None) -> Array:
    """`[start, stop)` by `step`; int32 for integer bounds, floatx otherwise.

    Args:
        start: The first value (or `stop` when `stop` is None).
        stop: The end, excluded.
        step: The spacing.
        dtype: The output dtype (default int32 or floatx, as above).

    Returns:
        A 1-D array.
    """
    if dtype is None:
        bounds = [unwrap(v) for v in (start, stop, step) if v is not None]
        is_float = builtins.any(
            isinstance(v, float) or dtypes.is_float(getattr(v, "dtype", "int32"))
            for v in bounds)
        dtype = dtypes.floatx() if is_float else "int32"
    return jnp.arange(unwrap(start), None if stop is None else unwrap(stop),
                      unwrap(step), dtype=dtypes.standardize(dtype))


@op
@compiled("num", "endpoint", "retstep", "dtype", "axis")
def linspace(start: ArrayLike, stop: ArrayLike, num: int | None = 50, endpoint: bool = True,
             retstep: bool = False, dtype: DTypeLike = None, axis: Axis = 0) -> Any:
    """`num` evenly spaced values from `start` to `stop`.

    Args:
        start: The first value.
        stop: The last value (included unless `endpoint=False`).
        num: How many values.
        endpoint: Include `stop`.
        retstep: Also return the spacing.
        dtype: The output dtype (default floatx).
        axis: The axis of the values when `start`/`stop` are arrays.

    Returns:
        A 1-D array of `num` values (with `retstep`: `(values, step)`).
    """
    return jnp.linspace(start, stop, num, endpoint=endpoint, retstep=retstep,
                        dtype=_dtype(dtype), axis=axis)


@op
@compiled("num", "endpoint", "base", "dtype", "axis")
def logspace(start: ArrayLike, stop: ArrayLike, num: int | None = 50, endpoint: bool = True,
             base: float = 10, dtype: DTypeLike = None, axis: Axis = 0) -> Array:
    """`num` values evenly spaced on a log scale, `base ** linspace(start, stop)`.

    Args:
        start: The first exponent.
        stop: The last exponent.
        num: How many values.
        endpoint: Include `base ** stop`.
        base: The base.
        dtype: The output dtype (default floatx).
        axis: The axis of the values when `start`/`stop` are arrays.

    Returns:
        A 1-D array of `num` values.
    """
    return jnp.logspace(start, stop, num, endpoint=endpoint, base=base,
                        dtype=_dtype(dtype), axis=axis)


def _shape(shape):
    return (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)


def zeros(shape: Sequence[int] | int, dtype: DTypeLike = None) -> Array:
    """Zeros of `shape` (floatx by default).

    Args:
        shape: An int or a tuple of ints.
        dtype: The output dtype (default floatx).

    Returns:
        An array of zeros.
    """
    return jnp.zeros(_shape(shape), dtype=dtypes.standardize(dtype))


def ones(shape: Sequence[int] | int, dtype: DTypeLike = None) -> Array:
    """Ones of `shape` (floatx by default).

    Args:
        shape: An int or a tuple of ints.
        dtype: The output dtype (default floatx).

    Returns:
        An array of ones.
    """
    return jnp.ones(_shape(shape), dtype=dtypes.standardize(dtype))


def empty(shape: Sequence[int] | int, dtype: DTypeLike = None) -> Array:
    """An array of `shape` (JAX has no uninitialized memory: zeros).

    Args:
        shape: An int or a tuple of ints.
        dtype: The output dtype (default floatx).

    Returns:
        An array of `shape`.
    """
    return jnp.empty(_shape(shape), dtype=dtypes.standardize(dtype))


@op
def full(shape: Sequence[int] | int, fill_value: ArrayLike, dtype: DTypeLike = None) -> Array:
    """`fill_value` broadcast to `shape`; the dtype follows the fill value
    (floatx for Python floats, int32 for Python ints) unless given.

    Args:
        shape: An int or a tuple of ints.
        fill_value: The value (scalar or broadcastable array).
        dtype: The output dtype (default from the fill value).

    Returns:
        An array of `shape`.
    """
    return _full(_shape(shape), fill_value, _dtype(dtype) or _python_scalar_dtype(fill_value))


@compiled("shape", "dtype")
def _full(shape, fill_value, dtype):
    return jnp.full(shape, fill_value, dtype=dtype)


@op
@compiled("dtype")
def zeros_like(x: ArrayLike, dtype: DTypeLike = None) -> Array:
    """Zeros of `x`'s shape.

    Args:
        x: Input array.
        dtype: The output dtype (default `x`'s).

    Returns:
        An array of zeros.
    """
    return jnp.zeros_like(x, dtype=_dtype(dtype))


@op
@compiled("dtype")
def ones_like(x: ArrayLike, dtype: DTypeLike = None) -> Array:
    """Ones of `x`'s shape.

    Args:
        x: Input array.
        dtype: The output dtype (default `x`'s).

    Returns:
        An array of ones.
    """
    return jnp.ones_like(x, dtype=_dtype(dtype))


@op
@compiled("dtype")
def full_like(x: ArrayLike, fill_value: ArrayLike, dtype: DTypeLike = None) -> Array:
    """`fill_value` in `x`'s shape.

    Args:
        x: Input array.
        fill_value: The value.
        dtype: The output dtype (default `x`'s).

    Returns:
        An array of `x`'s shape.
    """
    return jnp.full_like(x, fill_value, dtype=_dtype(dtype))


def eye(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = None) -> Array:
    """An N×M matrix with ones on diagonal `k` (floatx by default).

    Args:
        N: Number of rows.
        M: Number of columns (default `N`).
        k: Diagonal offset.
        dtype: The output dtype (default floatx).

    Returns:
        An `(N, M)` array.
    """
    return jnp.eye(N, M, k=k, dtype=dtypes.standardize(dtype))


def identity(n: int, dtype: DTypeLike = None) -> Array:
    """The `n × n` identity matrix.

    Args:
        n: The size.
        dtype: The output dtype (default floatx).

    Returns:
        An `(n, n)` array.
    """
    return jnp.identity(n, dtype=dtypes.standardize(dtype))


def tri(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = None) -> Array:
    """An `N × M` matrix with ones at and below diagonal `k`, zeros above.

    Args:
        N: Number of rows.
        M: Number of columns (default `N`).
        k: Diagonal offset.
        dtype: The output dtype (default floatx).

    Returns:
        An `(N, M)` array.
    """
    return jnp.tri(N, M, k=k, dtype=dtypes.standardize(dtype))


@op
@compiled("indexing")
def meshgrid(*x: ArrayLike, indexing: str = "xy") -> list[Array]:
    """Coordinate arrays from 1-D coordinate vectors.

    Args:
        *x: 1-D arrays, one per dimension.
        indexing: `"xy"` (Cartesian, the first two outputs transposed) or `"ij"` (matrix).

    Returns:
        A list of arrays, each of the grid's shape.
    """
    return jnp.meshgrid(*x, indexing=indexing)


@op
def array(x: ArrayLike, dtype: DTypeLike = None) -> Array:
    """`x` as a new array.

    Args:
        x: An array-like.
        dtype: The output dtype (default inferred from `x`).

    Returns:
        A `jax.Array`.
    """
    return jnp.array(x, dtype=_dtype(dtype))


@op
def copy(x: ArrayLike) -> Array:
    """A copy of `x`.

    Args:
        x: Input array.

    Returns:
        A new array equal to `x`.
    """
    return jnp.array(x, copy=True)


# --------------------------------------------------------------------------
# NaN-ignoring reductions (as NumPy's nan* functions)
# --------------------------------------------------------------------------

@op
@compiled("axis", "keepdims")
def nanmax(x, axis=None, keepdims=False):
    """The maximum along `axis`, skipping NaN entries.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The maxima, `x`'s dtype; NaN where a slice is all NaN.
    """
    return jnp.nanmax(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def nanmin(x, axis=None, keepdims=False):
    """The minimum along `axis`, skipping NaN entries.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The minima, `x`'s dtype; NaN where a slice is all NaN.
    """
    return jnp.nanmin(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def nansum(x, axis=None, keepdims=False):
    """The sum along `axis`, with NaN entries counted as 0.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The sums (0 for an all-NaN slice); small integer dtypes are promoted
        as by `sum`.
    """
    return jnp.nansum(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def nanprod(x, axis=None, keepdims=False):
    """The product along `axis`, with NaN entries counted as 1.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The products (1 for an all-NaN slice); small integer dtypes are
        promoted as by `prod`.
    """
    return jnp.nanprod(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def nanmean(x, axis=None, keepdims=False):
    """The mean along `axis` of the entries that are not NaN.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The means, a float array (integers become floatx); NaN where a
        slice is all NaN.
    """
    return jnp.nanmean(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def nanmedian(x, axis=None, keepdims=False):
    """The median along `axis` of the entries that are not NaN.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The medians, a float array; NaN where a slice is all NaN.
    """
    return jnp.nanmedian(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def nanstd(x, axis=None, keepdims=False):
    """The population standard deviation (ddof=0) along `axis`, skipping
    NaN entries.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The standard deviations, a float array; NaN where a slice is all NaN.
    """
    return jnp.nanstd(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def nanvar(x, axis=None, keepdims=False):
    """The population variance (ddof=0) along `axis`, skipping NaN entries.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The variances, a float array; NaN where a slice is all NaN.
    """
    return jnp.nanvar(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def nanargmax(x, axis=None, keepdims=False):
    """The index of the largest entry along `axis`, skipping NaN entries
    (the first one on ties).

    Args:
        x: Input array.
        axis: The axis to search; None searches the flattened array.
        keepdims: Keep the reduced axis, with size 1.

    Returns:
        An int32 array of indices; -1 where a slice is all NaN.
    """
    return jnp.nanargmax(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def nanargmin(x, axis=None, keepdims=False):
    """The index of the smallest entry along `axis`, skipping NaN entries
    (the first one on ties).

    Args:
        x: Input array.
        axis: The axis to search; None searches the flattened array.
        keepdims: Keep the reduced axis, with size 1.

    Returns:
        An int32 array of indices; -1 where a slice is all NaN.
    """
    return jnp.nanargmin(x, axis=_axis(axis), keepdims=keepdims)


@op
@compiled("axis", "dtype")
def nancumsum(x, axis=None, dtype=None):
    """The cumulative sum along `axis`, with NaN entries counted as 0.

    Args:
        x: Input array.
        axis: The axis; None works on the flattened array.
        dtype: The output dtype (default the input's).

    Returns:
        An array of `x`'s shape (1-D when `axis` is None).
    """
    return jnp.nancumsum(x, axis=axis, dtype=_dtype(dtype))


@op
@compiled("axis", "dtype")
def nancumprod(x, axis=None, dtype=None):
    """The cumulative product along `axis`, with NaN entries counted as 1.

    Args:
        x: Input array.
        axis: The axis; None works on the flattened array.
        dtype: The output dtype (default the input's).

    Returns:
        An array of `x`'s shape (1-D when `axis` is None).
    """
    return jnp.nancumprod(x, axis=axis, dtype=_dtype(dtype))


@op
@compiled("axis", "method", "keepdims")
def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    """The `q`-th quantiles of `x` along `axis`, skipping NaN entries.

    Args:
        x: Input array.
        q: Quantile(s) in [0, 1]: a scalar, or a 1-D array, list or tuple.
        axis: Axis or axes to reduce; None reduces all.
        method: How to interpolate between entries: `"linear"`, `"lower"`,
            `"higher"`, `"midpoint"` or `"nearest"`.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The quantiles, a float array; a leading axis of `q`'s size when `q`
        is 1-D; NaN where a slice is all NaN.
    """
    q = jnp.asarray(q)   # a list or tuple of quantiles too, as Keras takes
    return jnp.nanquantile(x, q, axis=_axis(axis), method=method, keepdims=keepdims)


@op
@compiled("axis", "method", "keepdims")
def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    """The `q`-th percentiles of `x` along `axis`, skipping NaN entries.

    Args:
        x: Input array.
        q: Percentile(s) in [0, 100]: a scalar, or a 1-D array, list or tuple.
        axis: Axis or axes to reduce; None reduces all.
        method: How to interpolate between entries: `"linear"`, `"lower"`,
            `"higher"`, `"midpoint"` or `"nearest"`.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The percentiles, a float array; a leading axis of `q`'s size when
        `q` is 1-D; NaN where a slice is all NaN.
    """
    q = jnp.asarray(q)   # a list or tuple of percentiles too, as Keras takes
    return jnp.nanpercentile(x, q, axis=_axis(axis), method=method, keepdims=keepdims)


@op
@compiled("axis", "method", "keepdims")
def percentile(x, q, axis=None, method="linear", keepdims=False):
    """The `q`-th percentiles of `x` along `axis` (`quantile` with `q` in
    percent).

    Args:
        x: Input array.
        q: Percentile(s) in [0, 100]: a scalar, or a 1-D array, list or tuple.
        axis: Axis or axes to reduce; None reduces all.
        method: How to interpolate between entries: `"linear"`, `"lower"`,
            `"higher"`, `"midpoint"` or `"nearest"`.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The percentiles, a float array; a leading axis of `q`'s size when
        `q` is 1-D.
    """
    q = jnp.asarray(q)   # a list or tuple of percentiles too, as Keras takes
    return jnp.percentile(x, q, axis=_axis(axis), method=method, keepdims=keepdims)


@op
@compiled("axis", "keepdims")
def ptp(x, axis=None, keepdims=False):
    """Peak to peak: `max - min` along `axis`.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The ranges, `x`'s dtype.
    """
    return jnp.ptp(x, axis=_axis(axis), keepdims=keepdims)


# --------------------------------------------------------------------------
# More elementwise ops
# --------------------------------------------------------------------------

fmax = op(jnp.fmax)
fmin = op(jnp.fmin)
fmod = op(jnp.fmod)
fabs = op(jnp.fabs)
gcd = op(jnp.gcd)
lcm = op(jnp.lcm)
nextafter = op(jnp.nextafter)
isneginf = op(jnp.isneginf)
isposinf = op(jnp.isposinf)
isreal = op(jnp.isreal)
bitwise_invert = op(jnp.invert)
bitwise_left_shift = op(jnp.left_shift)
bitwise_right_shift = op(jnp.right_shift)


def _float_like(x):
    """`x` as a float array: float dtypes kept, others floatx (as Keras)."""
    x = as_array(x)
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(dtypes.floatx())


@op
@compiled()
def sinc(x):
    """The normalized sinc function `sin(pi x) / (pi x)`, 1 at 0.

    Args:
        x: Input array; integers become floatx.

    Returns:
        An array of `x`'s shape, a float dtype.
    """
    return jnp.sinc(_float_like(x))


@op
@compiled()
def angle(x):
    """The complex argument (phase, in radians) of each entry of `x`.

    Args:
        x: Input array, complex or real (a real entry's angle is 0, or pi
            when negative); integers become floatx.

    Returns:
        A float array of `x`'s shape, in (-pi, pi].
    """
    return jnp.angle(_float_like(x))


@op
@compiled()
def i0(x):
    """The modified Bessel function of the first kind, order 0, elementwise.

    Args:
        x: Input array; integers become floatx.

    Returns:
        A float array of `x`'s shape.
    """
    return jnp.i0(_float_like(x))


@op
@compiled()
def logaddexp2(x1, x2):
    """`log2(2**x1 + 2**x2)` elementwise, computed without overflow.

    Args:
        x1: Input array; integers become floatx.
        x2: Input array, broadcastable with `x1`.

    Returns:
        A float array of the broadcast shape.
    """
    dtype = jnp.result_type(_float_like(x1), _float_like(x2))
    return jnp.logaddexp2(jnp.asarray(x1, dtype), jnp.asarray(x2, dtype))


@op
def ldexp(x1, x2):
    """`x1 * 2**x2` elementwise, with an integer exponent `x2`.

    Args:
        x1: The mantissas.
        x2: The exponents, an integer array broadcastable with `x1`.

    Returns:
        A float array of the broadcast shape (integer `x1` becomes float).

    Raises:
        TypeError: `x2` is not an integer tensor.
    """
    exponent = as_array(x2)
    if not jnp.issubdtype(exponent.dtype, jnp.integer):
        raise TypeError(f"ldexp: the exponent `x2` must be an integer tensor, got "
                        f"{exponent.dtype}; cast it with ops.cast(x2, 'int32').")
    return _ldexp(x1, exponent)


_ldexp = compiled()(jnp.ldexp)


@op
@compiled("rtol", "atol", "equal_nan")
def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether `|x1 - x2| <= atol + rtol * |x2|` holds for every entry.

    Args:
        x1: Input array.
        x2: Input array, broadcastable with `x1`.
        rtol: The relative tolerance.
        atol: The absolute tolerance.
        equal_nan: Count NaNs in the same place as equal.

    Returns:
        A boolean scalar.
    """
    return jnp.allclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan)


@op
@compiled("assume_unique", "invert")
def isin(x1, x2, assume_unique=False, invert=False):
    """Whether each entry of `x1` occurs in `x2`.

    Args:
        x1: The values to look up.
        x2: The values to look in (any shape; it is flattened).
        assume_unique: A speed hint: the entries of `x1` and of `x2` are each
            distinct.
        invert: Return whether each entry does *not* occur.

    Returns:
        A boolean array of `x1`'s shape.
    """
    return jnp.isin(x1, x2, assume_unique=assume_unique, invert=invert)


# --------------------------------------------------------------------------
# More shape manipulation and creation
# --------------------------------------------------------------------------

fliplr = op(compiled()(jnp.fliplr))
flipud = op(compiled()(jnp.flipud))


@op
@compiled("indices_or_sections")
def hsplit(x, indices_or_sections):
    """`split` along axis 1 (columns; axis 0 for 1-D `x`).

    Args:
        x: Input array of rank >= 1.
        indices_or_sections: The number of equal parts, or the indices to cut at.

    Returns:
        A list of arrays.
    """
    return jnp.hsplit(x, indices_or_sections)


@op
@compiled("indices_or_sections")
def vsplit(x, indices_or_sections):
    """`split` along axis 0 (rows).

    Args:
        x: Input array of rank >= 2.
        indices_or_sections: The number of equal parts, or the indices to cut at.

    Returns:
        A list of arrays.
    """
    return jnp.vsplit(x, indices_or_sections)


@op
@compiled("indices_or_sections")
def dsplit(x, indices_or_sections):
    """`split` along axis 2 (depth).

    Args:
        x: Input array of rank >= 3.
        indices_or_sections: The number of equal parts, or the indices to cut at.

    Returns:
        A list of arrays.
    """
    return jnp.dsplit(x, indices_or_sections)


@op
@compiled()
def dstack(xs):
    """Joins arrays along axis 2 (depth).

    Args:
        xs: A list of arrays; a 1-D `(n,)` one is read as `(1, n, 1)`, a 2-D
            `(m, n)` one as `(m, n, 1)`. All shapes must match except along
            axis 2.

    Returns:
        An array of rank >= 3.
    """
    return jnp.dstack(xs)


@op
@compiled("k")
def diagflat(x, k=0):
    """A 2-D array with the flattened `x` on a diagonal, zeros elsewhere.

    Args:
        x: Input array (flattened).
        k: The diagonal: 0 the main one, > 0 above it, < 0 below.

    Returns:
        An `(n + |k|, n + |k|)` array of `x`'s dtype, `n` the size of `x`.
    """
    return jnp.diagflat(x, k=k)


@op
@compiled("dtype")
def empty_like(x, dtype=None):
    """An uninitialized array like `x`.

    Args:
        x: The array whose shape (and dtype) to copy.
        dtype: The output dtype (default `x`'s).

    Returns:
        An array of `x`'s shape; its values are unspecified (zeros on JAX).
    """
    return jnp.empty_like(x, dtype=_dtype(dtype))


@op
@compiled("num", "endpoint", "dtype", "axis")
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """`num` numbers from `start` to `stop`, evenly spaced on a log scale
    (a geometric progression).

    Args:
        start: The first value (nonzero).
        stop: The last value (included unless `endpoint=False`).
        num: How many values.
        endpoint: Include `stop`.
        dtype: The output dtype (default: a float dtype inferred from
            `start` and `stop`).
        axis: The axis of the values when `start`/`stop` are arrays.

    Returns:
        A 1-D array of `num` values (for array `start`/`stop`, a new axis
        of size `num` at `axis`).
    """
    return jnp.geomspace(start, stop, num, endpoint=endpoint, dtype=_dtype(dtype), axis=axis)


@op
@compiled("N", "increasing")
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-D `x`: its columns are powers of `x`.

    Args:
        x: A 1-D array `(n,)`.
        N: The number of columns (default `n`).
        increasing: Powers `0, 1, ..., N - 1` left to right; by default they
            decrease, `N - 1` down to 0.

    Returns:
        An `(n, N)` array of `x`'s dtype.
    """
    return jnp.vander(x, N=N, increasing=increasing)


@op
@compiled("axis")
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of `y` along `axis` by the trapezoidal rule.

    Args:
        y: The sampled values.
        x: The sample points, 1-D along `axis` or `y`'s shape (default:
            evenly spaced by `dx`).
        dx: The spacing of the samples when `x` is None.
        axis: The axis to integrate along.

    Returns:
        `y`'s shape without `axis`, a float array.
    """
    return jnp.trapezoid(y, x, dx=dx, axis=axis)


@op
@compiled()
def corrcoef(x):
    """The Pearson correlation coefficients between variables.

    Args:
        x: A `(variables, observations)` array: one variable per row (a 1-D
            array is one variable).

    Returns:
        A `(variables, variables)` float matrix (a scalar for 1-D `x`).
    """
    return jnp.corrcoef(x)


@op
@compiled("kth", "axis")
def argpartition(x, kth, axis=-1):
    """Indices that partition `x` along `axis` around its `kth` entry.

    Taking `x` at these indices puts the entry that sorting would put at
    position `kth` there, smaller entries before it and larger ones after
    (each side in any order).

    Args:
        x: Input array.
        kth: The position to partition at (an int).
        axis: The axis to partition; None works on the flattened `x`.

    Returns:
        An int32 array of `x`'s shape (1-D when `axis` is None).
    """
    if axis is None:
        return jnp.argpartition(jnp.ravel(x), kth, axis=0)
    return jnp.argpartition(x, kth, axis=axis)


@op
@compiled("shape")
def unravel_index(indices, shape):
    """The coordinates of flat `indices` into an array of `shape`.

    Args:
        indices: Integer flat (row-major) indices, a scalar or an array.
        shape: The array's shape, a tuple of ints.

    Returns:
        A tuple with one int array of `indices`' shape per axis of `shape`.
    """
    return jnp.unravel_index(indices, shape)


@op
@compiled("bins", "range")
def histogram(x, bins=10, range=None):
    """A histogram of `x` in equal-width bins.

    Args:
        x: Input array (flattened).
        bins: The number of bins.
        range: `(lower, upper)` bounds of the bins (default: the min and max
            of `x`); entries outside are not counted.

    Returns:
        `(counts, bin_edges)`: float `(bins,)` counts and `(bins + 1,)` edges.
    """
    return jnp.histogram(x, bins=bins, range=range)


def unique(x, sorted=True, return_index=False, return_inverse=False, return_counts=False,
           axis=None, size=None, fill_value=None):
    """The distinct entries of `x` (or slices along `axis`), sorted.

    Eagerly the output length is the number of distinct values. Inside
    `jax.jit` it must be static: give `size`; the result is then cut to
    `size` entries or padded with `fill_value` (default: the smallest
    value), as in Keras on JAX.

    Args:
        x: Input array.
        sorted: Whether the values must come sorted (with False they may
            still be).
        return_index: Also return the index in (flattened) `x` of each
            value's first occurrence.
        return_inverse: Also return the indices into the unique values that
            rebuild `x`.
        return_counts: Also return how often each value occurs.
        axis: Find unique slices along this axis; None flattens `x`.
        size: A static output length (needed inside `jax.jit`).
        fill_value: The padding when `size` exceeds the number of distinct
            values (default: the smallest value).

    Returns:
        The unique values; with any `return_*` flag a tuple of them
        followed by (as requested) the int32 first-occurrence indices,
        inverse indices and counts.

    Raises:
        ValueError: inside `jax.jit` without `size`.
    """
    if size is None and isinstance(as_array(unwrap(x)), jax.core.Tracer):
        raise ValueError("unique: inside jax.jit the output size must be static; "
                         "pass `size` (and optionally `fill_value`).")
    return _unique(x, sorted, return_index, return_inverse, return_counts, axis, size,
                   fill_value)


@op
def _unique(x, sorted, return_index, return_inverse, return_counts, axis, size, fill_value):
    return jnp.unique(x, return_index=return_index, return_inverse=return_inverse,
                      return_counts=return_counts, axis=axis, equal_nan=False, size=size,
                      sorted=sorted, fill_value=fill_value)


# --------------------------------------------------------------------------
# Signal windows (symmetric, as NumPy's; floatx)
# --------------------------------------------------------------------------

def _window_length(x, name):
    length = unwrap(x)
    if np.ndim(length) != 0 or isinstance(length, jax.core.Tracer):
        raise ValueError(f"{name}: the window length must be a Python int (or a concrete "
                         f"scalar), got {length!r}.")
    return int(length)


def _cosine_window(x, coefficients, name):
    n = _window_length(x, name)
    if n <= 1:
        return jnp.ones((builtins.max(n, 0),), dtypes.floatx())
    phase = 2 * np.pi * np.arange(n) / (n - 1)
    window = builtins.sum(a * np.cos(k * phase) for k, a in enumerate(coefficients))
    return jnp.asarray(window, dtypes.floatx())


def hamming(x: int) -> jax.Array:
    """The Hamming window `0.54 - 0.46 cos(2 pi n / (x - 1))` of length `x`.

    Args:
        x: the window length (a Python int).

    Returns:
        A 1-D floatx tensor of length `x`.
    """
    return _cosine_window(x, (0.54, -0.46), "hamming")


def hanning(x: int) -> jax.Array:
    """The Hann window `0.5 - 0.5 cos(2 pi n / (x - 1))` of length `x`.

    Args:
        x: the window length (a Python int).

    Returns:
        A 1-D floatx tensor of length `x`.
    """
    return _cosine_window(x, (0.5, -0.5), "hanning")


def blackman(x: int) -> jax.Array:
    """The Blackman window `0.42 - 0.5 cos(2 pi n / (x - 1)) + 0.08 cos(4 pi n / (x - 1))`.

    Args:
        x: the window length (a Python int).

    Returns:
        A 1-D floatx tensor of length `x`.
    """
    return _cosine_window(x, (0.42, -0.5, 0.08), "blackman")


def bartlett(x: int) -> jax.Array:
    """The Bartlett (triangular) window of length `x`, zero at both ends.

    Args:
        x: the window length (a Python int).

    Returns:
        A 1-D floatx tensor of length `x`.
    """
    n = _window_length(x, "bartlett")
    if n <= 1:
        return jnp.ones((builtins.max(n, 0),), dtypes.floatx())
    half = (n - 1) / 2
    return jnp.asarray(1 - np.abs(np.arange(n) - half) / half, dtypes.floatx())


def kaiser(x: int, beta: float) -> jax.Array:
    """The Kaiser window `I0(beta sqrt(1 - (2n / (x - 1) - 1)^2)) / I0(beta)`.

    Args:
        x: the window length (a Python int).
        beta: the shape parameter (0: rectangular; larger: narrower).

    Returns:
        A 1-D floatx tensor of length `x`.
    """
    n = _window_length(x, "kaiser")
    if n <= 1:
        return jnp.ones((builtins.max(n, 0),), dtypes.floatx())
    ratio = 2 * np.arange(n) / (n - 1) - 1
    window = np.i0(beta * np.sqrt(1 - ratio ** 2)) / np.i0(beta)
    return jnp.asarray(window, dtypes.floatx())


# --------------------------------------------------------------------------
# Metadata (static Python values, not ops)
# --------------------------------------------------------------------------

def ndim(x: ArrayLike) -> int:
    """The rank of `x` (a Python int).

    Args:
        x: Input array.

    Returns:
        A Python int.
    """
    return jnp.ndim(unwrap(x))


def size(x: ArrayLike) -> int:
    """The number of elements of `x` (a Python int).

    Args:
        x: Input array.

    Returns:
        A Python int.
    """
    return int(np.prod(jnp.shape(unwrap(x))))


def vectorize(pyfunc, *, excluded=None, signature=None):
    """`pyfunc` mapped over its array arguments with broadcasting, as
    `numpy.vectorize`.

    Args:
        pyfunc: A function of arrays.
        excluded: Positions or names of arguments passed through unvectorized.
        signature: Core dimensions, e.g. `"(n),(n)->()"` (default: scalars).

    Returns:
        The vectorized function.
    """
    return jnp.vectorize(pyfunc, excluded=excluded or frozenset(), signature=signature)


@op
def view(x: ArrayLike, dtype: DTypeLike = None) -> Array:
    """The bytes of `x` read as another dtype (NumPy's `ndarray.view`).

    Args:
        x: An array.
        dtype: The dtype to read; None returns `x`.

    Returns:
        An array whose last axis scales by the ratio of item sizes.
    """
    x = as_array(x)
    return x if dtype is None else x.view(dtypes.standardize(dtype))


slogdet = _linalg.slogdet  # keras.ops.numpy.slogdet: the linalg op


__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_"))
