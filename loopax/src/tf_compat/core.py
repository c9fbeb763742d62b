"""TensorFlow's top-level ops (`tf.reduce_sum`, `tf.concat`, `tf.gather`, ...)
with TensorFlow's signatures and defaults, on loopax ops.

Differences from TensorFlow that follow from XLA (documented in the migration
guide): shapes are static, so ops whose output shape depends on values
(`boolean_mask`, `where(cond)` with one argument, `unique`) run eagerly only;
64-bit integer outputs (`argmax`'s default int64) are int32 unless JAX's
x64 mode is on.
"""

from __future__ import annotations

import builtins

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.state import Variable, tracing
from loopax.src.tensor import Tensor, unwrap
from loopax.src.tensor import constant as _constant
from loopax.src.tf_compat import dtypes
from loopax.src.tf_compat import keras_ops as ops
from loopax.src.tf_compat.errors import errors
from loopax.src.tf_compat.tensors import (
    as_tensor,
    as_tensors,
    axis_arg,
    document_module,
    static_ints,
    tf_op,
)

newaxis = None


def constant(value, dtype=None, shape=None, name=None):
    """A Tensor holding `value` (float64 NumPy data becomes float32, as loopax's
    default float; `shape` broadcasts a scalar)."""
    return as_tensor(_constant(value, dtype=dtype, shape=None if shape is None else
                               static_ints(shape, "constant(shape=)"), name=name))


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """`value` as a Tensor (a Tensor or Variable of another dtype raises, as in TF;
    a Variable is read as a taped op, so gradients flow through the result)."""
    if isinstance(value, (Tensor, Variable, jax.Array)):
        if dtype is not None and jnp.dtype(value.dtype) != dtypes.storage_dtype(dtype):
            raise ValueError(
                f"convert_to_tensor: a tensor of dtype {value.dtype} was given with "
                f"dtype={np.dtype(dtype).name}; use tf.cast(value, dtype) to convert it.")
        if isinstance(value, Variable):
            return as_tensor(ops.copy(value))
        return as_tensor(value)
    return as_tensor(_constant(value, dtype=dtype if dtype is not None else dtype_hint))


def is_tensor(x):
    """Whether `x` is a tensor-like value (Tensor, Variable or JAX array)."""
    return isinstance(x, (Tensor, Variable, jax.Array))


def get_static_value(tensor, partial=False):
    """The NumPy value of `tensor` when it is known now (None under a trace)."""
    value = unwrap(tensor)
    if isinstance(value, jax.core.Tracer):
        return None
    return np.asarray(value)


def executing_eagerly():
    """False while a compiled function is traced, True otherwise."""
    return not tracing()


# ---- reductions -------------------------------------------------------------

def _numbers_only(value):
    if isinstance(value, (list, tuple)):
        return all(_numbers_only(v) for v in value)
    return isinstance(value, (int, float, bool, np.number, np.bool_))


def _reduction(reduce):
    def tf_reduce(input_tensor, axis=None, keepdims=False, name=None):
        if isinstance(input_tensor, (list, tuple)):
            # A list or tuple is converted as TensorFlow converts it: Python numbers
            # (a shape: `tf.reduce_prod(layer.kernel.shape)`) as `tf.constant`
            # (ints -> int32), tensors stacked (a recorded op under a tape).
            input_tensor = constant(input_tensor) if _numbers_only(input_tensor) \
                else ops.stack(list(input_tensor))
        out = reduce(input_tensor, axis=axis_arg(axis), keepdims=keepdims)
        if reduce is ops.mean and jnp.issubdtype(jnp.result_type(input_tensor), jnp.integer):
            # TensorFlow's integer mean is an integer (the quotient truncated).
            out = ops.cast(ops.trunc(out), jnp.result_type(input_tensor))
        return as_tensor(out)
    tf_reduce.__doc__ = (f"`{reduce.__name__}` over `axis` (None: all axes), as "
                         f"tf.reduce_*; `keepdims` keeps reduced axes as size 1.")
    return tf_reduce


reduce_sum = _reduction(ops.sum)
reduce_mean = _reduction(ops.mean)
reduce_max = _reduction(ops.max)
reduce_min = _reduction(ops.min)
reduce_prod = _reduction(ops.prod)
reduce_any = _reduction(ops.any)
reduce_all = _reduction(ops.all)
reduce_logsumexp = _reduction(ops.logsumexp)
reduce_std = _reduction(ops.std)
reduce_variance = _reduction(ops.var)


def _arg_extreme(find):
    def tf_arg(input, axis=None, output_type=dtypes.int64, name=None):
        # TensorFlow's default axis is 0 (Keras's argmax flattens instead).
        return as_tensor(ops.cast(find(input, axis=0 if axis is None else axis_arg(axis)),
                                  dtypes.storage_dtype(output_type)))
    tf_arg.__doc__ = (f"Indices of the {find.__name__[3:]} along `axis` (default 0, as "
                      "TensorFlow), as `output_type` (int64: int32 without JAX x64).")
    return tf_arg


argmax = _arg_extreme(ops.argmax)
argmin = _arg_extreme(ops.argmin)


# ---- shapes and layout --------------------------------------------------------

def concat(values, axis, name=None):
    """`values` joined along `axis`."""
    return as_tensor(ops.concatenate(list(values), axis=axis_arg(axis)))


def stack(values, axis=0, name=None):
    """`values` (same shape) stacked along a new `axis`."""
    return as_tensor(ops.stack(list(values), axis=axis_arg(axis)))


def unstack(value, num=None, axis=0, name=None):
    """`value` split along `axis` into a list of its slices."""
    return [as_tensor(t) for t in ops.unstack(value, num=num, axis=axis_arg(axis))]


def reshape(tensor, shape, name=None):
    """`tensor` with shape `shape` (one entry may be -1; entries may be Tensors
    known at trace time, e.g. from `tf.shape`)."""
    return as_tensor(ops.reshape(tensor, static_ints(shape, "reshape(shape=)")))


def transpose(a, perm=None, conjugate=False, name=None):
    """`a` with axes permuted by `perm` (default: reversed)."""
    out = ops.transpose(a, None if perm is None else static_ints(perm, "transpose(perm=)"))
    return as_tensor(ops.conj(out) if conjugate else out)


def expand_dims(input, axis, name=None):
    """`input` with a size-1 axis inserted at `axis`."""
    return as_tensor(ops.expand_dims(input, axis_arg(axis)))


def squeeze(input, axis=None, name=None):
    """`input` without its size-1 axes (or only those in `axis`)."""
    return as_tensor(ops.squeeze(input, axis=axis_arg(axis)))


def tile(input, multiples, name=None):
    """`input` repeated `multiples[i]` times along each axis i."""
    return as_tensor(ops.tile(input, static_ints(multiples, "tile(multiples=)")))


def broadcast_to(input, shape, name=None):
    """`input` broadcast to `shape`."""
    return as_tensor(ops.broadcast_to(input, static_ints(shape, "broadcast_to(shape=)")))


def reverse(tensor, axis, name=None):
    """`tensor` with the order of entries reversed along each axis in `axis`."""
    return as_tensor(ops.flip(tensor, axis=axis_arg(axis)))


def roll(input, shift, axis, name=None):
    """`input` shifted cyclically by `shift` along `axis`."""
    return as_tensor(ops.roll(input, shift, axis=axis_arg(axis)))


@tf_op
def _pad(tensor, paddings, mode, constant_values):
    np_mode = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}[mode]
    if np_mode == "constant":
        return jnp.pad(tensor, paddings, constant_values=constant_values)
    return jnp.pad(tensor, paddings, mode=np_mode)


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """`tensor` padded by `paddings[i] = [before, after]` along axis i."""
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC', got {mode!r}.")
    pairs = tuple(tuple(static_ints(p, "pad(paddings=)")) for p in np.asarray(unwrap(paddings)))
    return _pad(tensor, pairs, mode, constant_values)


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """`value` cut along `axis` into `num_or_size_splits` equal parts, or parts of
    the given sizes (one size may be -1)."""
    axis = axis_arg(axis)
    if isinstance(num_or_size_splits, int):
        return [as_tensor(t) for t in ops.split(value, num_or_size_splits, axis=axis)]
    sizes = list(static_ints(num_or_size_splits, "split(num_or_size_splits=)"))
    if -1 in sizes:
        total = value.shape[axis]
        sizes[sizes.index(-1)] = total - (sum(sizes) + 1)
    return [as_tensor(t) for t in ops.split(value, list(np.cumsum(sizes)[:-1]), axis=axis)]


def slice(input_, begin, size, name=None):
    """The block of `input_` starting at `begin` of extent `size` (-1: to the end)."""
    begin = static_ints(begin, "slice(begin=)")
    size = [d - b if s == -1 else s
            for b, s, d in zip(begin, static_ints(size, "slice(size=)"), input_.shape)]
    return as_tensor(ops.slice(input_, begin, size))


def shape(input, out_type=dtypes.int32, name=None):
    """The shape of `input` as a 1-D integer Tensor (a constant: XLA shapes are
    static, so it can be used in `reshape` inside a compiled function)."""
    with jax.ensure_compile_time_eval():
        return as_tensor(jnp.asarray(np.shape(unwrap(input)),
                                     dtype=dtypes.storage_dtype(out_type)))


def rank(input, name=None):
    """The number of axes of `input`, as an int32 scalar Tensor."""
    with jax.ensure_compile_time_eval():
        return as_tensor(jnp.asarray(np.ndim(unwrap(input)), dtype=jnp.int32))


def size(input, out_type=dtypes.int32, name=None):
    """The number of entries of `input`, as a scalar Tensor."""
    with jax.ensure_compile_time_eval():
        return as_tensor(jnp.asarray(int(np.prod(np.shape(unwrap(input)))),
                                     dtype=dtypes.storage_dtype(out_type)))


# ---- creation -----------------------------------------------------------------

def range(start, limit=None, delta=1, dtype=None, name="range"):
    """[start, limit) in steps of `delta` (`range(n)`: 0..n-1); int32 for ints,
    float32 for floats, as TensorFlow."""
    if limit is None:
        start, limit = 0, start
    values = [unwrap(v) for v in (start, limit, delta)]
    if dtype is None:
        floating = builtins.any(jnp.issubdtype(jnp.result_type(v), jnp.floating)
                                for v in values)
        dtype = dtypes.float32 if floating else dtypes.int32
    return as_tensor(ops.arange(*values, dtype=dtype))


def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop` (both included)."""
    return as_tensor(ops.linspace(start, stop, int(num), axis=axis))


def _filled(fn):
    def create(shape, dtype=dtypes.float32, name=None, layout=None):
        return as_tensor(fn(static_ints(shape, f"{fn.__name__}(shape=)"), dtype=dtype))
    create.__doc__ = f"A Tensor of `shape` filled as `{fn.__name__}` (float32 by default)."
    return create


ones = _filled(ops.ones)
zeros = _filled(ops.zeros)


def ones_like(input, dtype=None, name=None, layout=None):
    """Ones of `input`'s shape (and dtype unless given)."""
    return as_tensor(ops.ones_like(input, dtype=dtype))


def zeros_like(input, dtype=None, name=None, layout=None):
    """Zeros of `input`'s shape (and dtype unless given)."""
    return as_tensor(ops.zeros_like(input, dtype=dtype))


def fill(dims, value, name=None, layout=None):
    """A Tensor of shape `dims` filled with `value` (of `value`'s dtype)."""
    value = unwrap(value)
    dtype = dtypes.float32 if isinstance(value, float) else None
    return as_tensor(ops.full(static_ints(dims, "fill(dims=)"), value, dtype=dtype))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """The identity matrix (`num_rows` x `num_columns`), repeated over `batch_shape`."""
    matrix = ops.eye(int(num_rows), None if num_columns is None else int(num_columns),
                     dtype=dtype)
    if batch_shape is not None:
        batch = static_ints(batch_shape, "eye(batch_shape=)")
        matrix = ops.broadcast_to(matrix, batch + tuple(matrix.shape))
    return as_tensor(matrix)


def identity(input, name=None):
    """`input`'s value (a Variable is read)."""
    return as_tensor(ops.copy(input))


def stop_gradient(input, name=None):
    """`input`, treated as a constant by gradients (unconnected: None, as TF)."""
    return as_tensor(ops.stop_gradient(input))


def cast(x, dtype, name=None):
    """`x` converted to `dtype` (floats to ints truncate toward zero, as TF)."""
    return as_tensor(ops.cast(x, dtype))


# ---- arithmetic ----------------------------------------------------------------

def _binary(fn, doc):
    def tf_binary(x, y, name=None):
        return as_tensor(fn(x, y))
    tf_binary.__doc__ = doc
    return tf_binary


add = _binary(ops.add, "x + y, elementwise with broadcasting.")
subtract = _binary(ops.subtract, "x - y, elementwise with broadcasting.")
multiply = _binary(ops.multiply, "x * y, elementwise with broadcasting.")
divide = _binary(ops.divide, "x / y (true division), elementwise.")
truediv = divide
maximum = _binary(ops.maximum, "The larger of x and y, elementwise.")
minimum = _binary(ops.minimum, "The smaller of x and y, elementwise.")
pow = _binary(ops.power, "x ** y, elementwise.")
equal = _binary(ops.equal, "x == y, elementwise.")
not_equal = _binary(ops.not_equal, "x != y, elementwise.")
greater = _binary(ops.greater, "x > y, elementwise.")
greater_equal = _binary(ops.greater_equal, "x >= y, elementwise.")
less = _binary(ops.less, "x < y, elementwise.")
less_equal = _binary(ops.less_equal, "x <= y, elementwise.")
logical_and = _binary(ops.logical_and, "x and y, elementwise.")
logical_or = _binary(ops.logical_or, "x or y, elementwise.")
floordiv = _binary(ops.floor_divide, "x // y, elementwise.")
floormod = mod = _binary(ops.mod, "x mod y (sign of y), elementwise.")


def _unary(fn):
    def tf_unary(x, name=None):
        return as_tensor(fn(x))
    tf_unary.__doc__ = f"`{fn.__name__}` of `x`, elementwise."
    tf_unary.__name__ = fn.__name__
    return tf_unary


square = _unary(ops.square)
sqrt = _unary(ops.sqrt)
rsqrt = _unary(ops.rsqrt)
exp = _unary(ops.exp)
log = _unary(ops.log)
abs = _unary(ops.abs)
negative = _unary(ops.negative)
sign = _unary(ops.sign)
floor = _unary(ops.floor)
ceil = _unary(ops.ceil)
round = _unary(ops.round)
sin, cos, tan = _unary(ops.sin), _unary(ops.cos), _unary(ops.tan)
tanh = _unary(ops.tanh)
sigmoid = _unary(ops.sigmoid)
logical_not = _unary(ops.logical_not)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, grad_a=False,
           grad_b=False, name=None):
    """a @ b over the last two axes (batched), optionally transposing or
    conjugate-transposing either first."""
    if transpose_a or adjoint_a:
        a = ops.swapaxes(ops.conj(a) if adjoint_a else a, -1, -2)
    if transpose_b or adjoint_b:
        b = ops.swapaxes(ops.conj(b) if adjoint_b else b, -1, -2)
    try:
        out = ops.matmul(a, b)
    except ValueError as e:   # TensorFlow's eager shape error (still a ValueError)
        raise errors.InvalidArgumentError(str(e)) from None
    return as_tensor(out if output_type is None else ops.cast(out, output_type))


def tensordot(a, b, axes, name=None):
    """Sum of products over `axes` (an int, or a pair of axis lists)."""
    return as_tensor(ops.tensordot(a, b, axes=axes))


def einsum(equation, *inputs, **kwargs):
    """Einstein summation, as `np.einsum`."""
    return as_tensor(ops.einsum(equation, *inputs))


def add_n(inputs, name=None):
    """The sum of the Tensors in `inputs` (same shape)."""
    total = inputs[0]
    for t in inputs[1:]:
        total = ops.add(total, t)
    return as_tensor(total)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sum along `axis` (`exclusive`: starting at 0; `reverse`: from the end)."""
    return as_tensor(_cumsum(x, axis_arg(axis), bool(exclusive), bool(reverse)))


@tf_op
def _cumsum(x, axis, exclusive, reverse):
    if reverse:
        x = jnp.flip(x, axis)
    out = jnp.cumsum(x, axis=axis)
    if exclusive:
        out = out - x
    return jnp.flip(out, axis) if reverse else out


# ---- selection --------------------------------------------------------------------

def where(condition, x=None, y=None, name=None):
    """`x` where `condition`, else `y` (broadcast); with `condition` alone, the
    indices of its true entries, shape (n, rank), int64 (eager only: the
    output's shape depends on the values)."""
    if (x is None) != (y is None):
        raise ValueError("tf.where: give both `x` and `y`, or neither.")
    if x is None:
        value = unwrap(condition)
        if isinstance(value, jax.core.Tracer):
            raise TypeError(
                "tf.where(condition) with one argument returns as many indices as "
                "there are true entries, a shape XLA cannot compile. Inside a compiled "
                "function use tf.where(condition, x, y) to select elementwise.")
        return as_tensor(jnp.asarray(np.argwhere(np.asarray(value)),
                                     dtype=dtypes.storage_dtype(dtypes.int64)))
    return as_tensor(ops.where(condition, x, y))


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of `params` along `axis` (default 0) at `indices`."""
    axis = 0 if axis is None else axis_arg(axis)
    if batch_dims:
        return as_tensor(_batched_gather(params, indices, axis, int(batch_dims)))
    return as_tensor(ops.take(params, indices, axis=axis))


@tf_op
def _batched_gather(params, indices, axis, batch_dims):
    take = lambda p, i: jnp.take(p, i, axis=axis - batch_dims)
    for _ in builtins.range(batch_dims):
        take = jax.vmap(take)
    return take(params, indices)


def gather_nd(params, indices, batch_dims=0, name=None):
    """Entries (or slices) of `params` at the index tuples in `indices`' last axis."""
    if batch_dims:
        raise NotImplementedError("loopax.tf.gather_nd: batch_dims is not supported; "
                                  "use tf.gather(..., batch_dims=) or vectorized_map.")
    return as_tensor(_gather_nd(params, indices))


@tf_op
def _gather_nd(params, indices):
    indices = jnp.asarray(indices)
    return params[tuple(jnp.moveaxis(indices, -1, 0))]


def boolean_mask(tensor, mask, axis=None, name=None):
    """The entries (slices) of `tensor` where `mask` is true, flattened over the
    mask's axes (eager only: the output's shape depends on the mask)."""
    value, mask_value = unwrap(tensor), unwrap(mask)
    if isinstance(mask_value, jax.core.Tracer):
        raise TypeError(
            "tf.boolean_mask returns as many entries as the mask has true values, a "
            "shape XLA cannot compile. Inside a compiled function weight instead: "
            "tf.where(mask, x, tf.zeros_like(x)), or sum with the mask as a weight.")
    axis = 0 if axis is None else axis_arg(axis)
    flat = np.flatnonzero(np.asarray(mask_value).reshape(-1))
    mask_ndim = np.ndim(mask_value)
    merged = ops.reshape(value, value.shape[:axis] + (-1,) + value.shape[axis + mask_ndim:])
    return as_tensor(ops.take(merged, jnp.asarray(flat, dtype=jnp.int32), axis=axis))


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """`depth`-wide one-hot vectors of `indices` (out-of-range indices: all
    `off_value`), placed at `axis` (default last)."""
    dtype = dtype or dtypes.float32
    hot = ops.one_hot(indices, int(depth), axis=-1 if axis is None else axis, dtype=dtype)
    if on_value is None and off_value is None:
        return as_tensor(hot)
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    return as_tensor(ops.cast(ops.where(ops.cast(hot, "bool"), on, off), dtype))


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis` ("ASCENDING" or "DESCENDING")."""
    out = ops.sort(values, axis=axis)
    return as_tensor(ops.flip(out, axis=axis) if direction == "DESCENDING" else out)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """Indices that sort `values` along `axis`."""
    if direction == "DESCENDING":
        return as_tensor(ops.argsort(ops.negative(values), axis=axis))
    return as_tensor(ops.argsort(values, axis=axis))


# ---- clipping ------------------------------------------------------------------------

def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`t` with entries limited to [clip_value_min, clip_value_max]."""
    return as_tensor(ops.clip(t, clip_value_min, clip_value_max))


@tf_op
def _clip_by_norm(t, clip_norm, axes):
    norm = jnp.sqrt(jnp.sum(jnp.square(t), axis=axes, keepdims=True))
    clip_norm = jnp.asarray(clip_norm, t.dtype)
    # Where the norm is zero, t is zero: the division is made safe, not used.
    scale = clip_norm / jnp.maximum(norm, clip_norm)
    return t * scale


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`t` scaled down so its L2 norm (over `axes`, default all) is at most `clip_norm`."""
    return _clip_by_norm(t, clip_norm, axis_arg(axes))


def global_norm(t_list, name=None):
    """sqrt(sum of squares of every entry of every tensor in `t_list`; None skipped)."""
    squares = [ops.sum(ops.square(ops.cast(t, "float32"))) for t in t_list if t is not None]
    return as_tensor(ops.sqrt(add_n(squares) if squares else ops.zeros(())))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(`t_list` scaled by clip_norm / max(global_norm, clip_norm), global_norm);
    None entries stay None, as TensorFlow (gradients of unused variables)."""
    if isinstance(t_list, (Tensor, Variable, jax.Array, np.ndarray)):
        raise TypeError("tf.clip_by_global_norm: `t_list` must be a list of tensors "
                        "(e.g. gradients), not one tensor; use tf.clip_by_norm for one.")
    norm = global_norm(t_list) if use_norm is None else use_norm
    scale = ops.divide(clip_norm, ops.maximum(norm, clip_norm))
    clipped = [None if t is None else as_tensor(ops.multiply(t, ops.cast(scale, t.dtype)))
               for t in t_list]
    return clipped, as_tensor(norm)


# ---- control flow ----------------------------------------------------------------------

def cond(pred, true_fn=None, false_fn=None, name=None):
    """`true_fn()` if `pred` else `false_fn()`; a traced `pred` compiles both."""
    if true_fn is None or false_fn is None:
        raise TypeError("tf.cond needs both `true_fn` and `false_fn` (functions of no "
                        "arguments returning the same structure).")
    return as_tensors(ops.cond(pred, true_fn, false_fn))


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeats `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`; returns
    the final loop vars in `loop_vars`' structure (shapes and dtypes must not change)."""
    out = ops.while_loop(cond, body, loop_vars, maximum_iterations=maximum_iterations)
    if isinstance(loop_vars, list):
        out = list(out)
    return as_tensors(out)


def unique(x, out_idx=dtypes.int32, name=None):
    """(the distinct values of 1-D `x` in order of first appearance, the index of
    each entry's value among them); eager only (the size depends on the values)."""
    value = np.asarray(unwrap(x))
    _, first, inverse = np.unique(value, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(order.size)
    return (as_tensor(jnp.asarray(value[np.sort(first)])),
            as_tensor(jnp.asarray(rank_of[inverse.reshape(-1)], dtype=out_idx)))


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """The vector or matrix norm of `tensor` (default: L2 over all entries)."""
    if ord == "euclidean":
        ord = "fro" if isinstance(axis, (list, tuple)) and len(axis) == 2 else None
    if axis is not None:
        return as_tensor(ops.norm(tensor, ord=ord, axis=axis_arg(axis), keepdims=bool(keepdims)))
    flat = ops.norm(ops.reshape(tensor, (-1,)), ord=ord)
    if keepdims:
        flat = ops.reshape(flat, (1,) * np.ndim(unwrap(tensor)))
    return as_tensor(flat)


document_module(globals())
