"""`tf.math`: the top-level arithmetic and reductions under their tf.math names,
plus the elementwise functions TensorFlow keeps only here."""

from __future__ import annotations

from loopax.src.tf_compat import core, nn
from loopax.src.tf_compat import keras_ops as ops
from loopax.src.tf_compat.core import (  # noqa: F401 - re-exported as tf.math.*
    abs,
    add,
    add_n,
    argmax,
    argmin,
    ceil,
    cos,
    cumsum,
    divide,
    equal,
    exp,
    floor,
    floordiv,
    floormod,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    pow,
    reduce_all,
    reduce_any,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_std,
    reduce_sum,
    reduce_variance,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    truediv,
)
from loopax.src.tf_compat.nn import in_top_k, softplus, top_k  # noqa: F401
from loopax.src.tf_compat.tensors import as_tensor, document_module

log1p = core._unary(ops.log1p)
expm1 = core._unary(ops.expm1)
reciprocal = core._unary(ops.reciprocal)
erf = core._unary(ops.erf)
asin, acos, atan = core._unary(ops.arcsin), core._unary(ops.arccos), core._unary(ops.arctan)
sinh, cosh = core._unary(ops.sinh), core._unary(ops.cosh)
is_nan = core._unary(ops.isnan)
is_inf = core._unary(ops.isinf)
is_finite = core._unary(ops.isfinite)
atan2 = core._binary(ops.arctan2, "atan(y / x) with the quadrant, elementwise.")
divide_no_nan = core._binary(ops.divide_no_nan, "x / y, 0 where y == 0.")
logical_xor = core._binary(ops.logical_xor, "x xor y, elementwise.")
l2_normalize = nn.l2_normalize
softmax = nn.softmax
log_softmax = nn.log_softmax


def squared_difference(x, y, name=None):
    """(x - y) ** 2, elementwise."""
    return as_tensor(ops.square(ops.subtract(x, y)))


def count_nonzero(input, axis=None, keepdims=None, dtype=core.dtypes.int64,
                  name=None):
    """The number of non-zero entries over `axis`."""
    counted = ops.sum(ops.cast(ops.not_equal(input, 0), "int32"), axis=axis,
                      keepdims=bool(keepdims))
    return as_tensor(ops.cast(counted, core.dtypes.storage_dtype(dtype)))


def segment_sum(data, segment_ids, name=None):
    """Sums of `data`'s rows per (sorted) segment id."""
    return as_tensor(ops.segment_sum(data, segment_ids, sorted=True))


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums of `data`'s rows per segment id, `num_segments` of them."""
    return as_tensor(ops.segment_sum(data, segment_ids, num_segments=int(num_segments)))


document_module(globals())
