"""Core ops (`keras.ops.core`): conversion, casting, control flow, slicing
and scattering, dtype helpers.

Control flow and a recording GradientTape: a tape only sees loopax ops that
run in Python, and JAX's loop primitives run their body as one traced
program the tape cannot look into. So while a tape records, the control-flow
ops run in Python whenever the decision is known (a concrete predicate, loop
bounds or scan length), and every op in the taken branch or loop body is
recorded. Without a tape they are `lax.cond`, `lax.fori_loop`, `lax.scan`, ...
(as in Keras). A data-dependent `while_loop` (or `fori_loop` with traced
bounds) over values a tape follows raises: JAX cannot reverse-differentiate
it either. Values captured by closure inside a traced `lax` loop are not
seen by a tape; pass them through the loop state instead.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from loopax.src import dtypes
from loopax.src.api_export import export
from loopax.src.array_types import Array, ArrayLike, Axis, DTypeLike
from loopax.src.ops.numpy import clip, moveaxis, stack, where
from loopax.src.ops.utils import as_array, compiled
from loopax.src.state import Variable, _state, is_tracer
from loopax.src.tensor import Tensor, op, unwrap

_IMPORTED = set(globals())


# --------------------------------------------------------------------------
# Conversion and dtypes
# --------------------------------------------------------------------------

def _default_dtype(x):
    """The dtype Keras picks when none is given: float64 and Python floats ->
    floatx, int64 and Python ints -> int32."""
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, int):
        return "int32"
    if isinstance(x, float):
        return dtypes.floatx()
    dtype = getattr(x, "dtype", None)
    if dtype is None:  # a nested list or tuple
        dtype = np.asarray(jnp.asarray(x)).dtype if _has_tracer(x) else np.asarray(x).dtype
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return dtypes.floatx()
    if dtype == np.int64:
        return "int32"
    if dtype == np.uint64:
        return "uint32"
    return dtype.name


def _has_tracer(x):
    return builtins.any(is_tracer(leaf) for leaf in jax.tree_util.tree_leaves(x))


@op(tensor_out=False)
def convert_to_tensor(x: ArrayLike, dtype: DTypeLike = None, sparse: bool | None = None,
                      ragged: bool | None = None) -> Array:
    """`x` as a `jax.Array` (NumPy arrays, lists, scalars, Variables).

    Without `dtype`, float64 and Python floats become floatx (float32),
    int64 and Python ints become int32, as in Keras.

    Args:
        x: An array-like, Variable or Tensor.
        dtype: The dtype (default inferred as above).
        sparse: Must be falsy: loopax has no sparse tensors.
        ragged: Must be falsy: loopax has no ragged tensors.

    Returns:
        A `jax.Array`.

    Raises:
        ValueError: `sparse` or `ragged` is set.
    """
    if sparse or ragged:
        raise ValueError("convert_to_tensor: loopax has no sparse or ragged tensors.")
    if dtype is None and isinstance(x, jax.Array):
        return x
    dtype = dtypes.standardize(dtype) if dtype is not None else _default_dtype(x)
    return dtypes.asarray(x, dtype=dtype)


@op
@compiled("dtype")
def cast(x: ArrayLike, dtype: DTypeLike) -> Array:
    """`x` converted to `dtype` (floats to ints truncate toward zero).

    Args:
        x: Input array.
        dtype: The target dtype or its name.

    Returns:
        An array of `x`'s shape and `dtype`.
    """
    return jnp.asarray(x).astype(dtypes.standardize(dtype))


@op
@compiled("dtype")
def saturate_cast(x: ArrayLike, dtype: DTypeLike) -> Array:
    """`cast` that first clips to `dtype`'s range instead of wrapping around.

    Args:
        x: Input array.
        dtype: The target dtype.

    Returns:
        An array of `x`'s shape and `dtype`.
    """
    dtype = jnp.dtype(dtypes.standardize(dtype))
    x = jnp.asarray(x)
    if not (jnp.issubdtype(x.dtype, jnp.bool_) or jnp.issubdtype(dtype, jnp.bool_)):
        low, high = _range(dtype)
        source_low, source_high = _range(x.dtype)
        x = jnp.clip(x, builtins.max(low, source_low), builtins.min(high, source_high))
    return x.astype(dtype)


def _range(dtype):
    info = jnp.iinfo(dtype) if jnp.issubdtype(dtype, jnp.integer) else jnp.finfo(dtype)
    return float(info.min), float(info.max)


def convert_to_numpy(x: ArrayLike) -> np.ndarray:
    """`x` as a NumPy array.

    Args:
        x: An array, Variable, Tensor or array-like.

    Returns:
        A `np.ndarray`.
    """
    return np.asarray(unwrap(x))


def is_tensor(x: Any) -> bool:
    """Whether `x` is an array loopax computes on (a `jax.Array` or `Tensor`;
    not a Variable or a NumPy array).

    Args:
        x: Any object.

    Returns:
        A Python bool.
    """
    return isinstance(x, (jax.Array, Tensor))


def shape(x: Any) -> tuple:
    """The shape of `x` as a tuple of Python ints.

    Args:
        x: An array, Variable, Tensor or symbolic tensor.

    Returns:
        A tuple (None for unknown symbolic sizes).
    """
    return tuple(np.shape(unwrap(x)) if not hasattr(x, "shape") else x.shape)


def dtype(x: Any) -> str:
    """The standardized dtype name of `x` ("float32", "int32", ...).

    Args:
        x: An array, Variable, Tensor or array-like.

    Returns:
        A dtype name such as `"float32"`.
    """
    value = unwrap(x)
    return dtypes.standardize(value.dtype if hasattr(value, "dtype") else _default_dtype(value))


standardize_dtype = dtypes.standardize
is_float_dtype = dtypes.is_float
is_int_dtype = dtypes.is_int


@export("loopax.backend.result_type")
def result_type(*dtypes_or_values: Any) -> str:
    """The dtype JAX promotes the given dtypes (or values) to.

    Args:
        *dtypes_or_values: Dtypes, dtype names or arrays.

    Returns:
        The promoted dtype's name; `floatx()` when none is given (as Keras).
    """
    if not dtypes_or_values:
        return dtypes.floatx()
    return dtypes.standardize(jnp.result_type(*(
        unwrap(d) if isinstance(d, (Variable, Tensor)) else d for d in dtypes_or_values)))


@op(differentiable=False)
@compiled()
def stop_gradient(variable: ArrayLike) -> Array:
    """`variable`'s value, treated as a constant by every gradient.

    Under a GradientTape a source reached only through it is unconnected, as in
    TensorFlow: its gradient is None (zeros with `unconnected_gradients="zero"`).
    Under `jax.grad` its gradient is zero.

    Args:
        variable: An array, Variable or Tensor.

    Returns:
        The value, as an array no gradient flows through.
    """
    return lax.stop_gradient(variable)


# --------------------------------------------------------------------------
# Slicing and scattering
# --------------------------------------------------------------------------

@op
@compiled("shape")
def slice(inputs: ArrayLike, start_indices: Sequence[Any], shape: Sequence[int]) -> Array:
    """The block of `shape` starting at `start_indices` (which may be traced).

    Args:
        inputs: The array.
        start_indices: One start index per axis.
        shape: The block's shape.

    Returns:
        An array of `shape`.
    """
    return lax.dynamic_slice(inputs, tuple(start_indices), shape)


@op
@compiled()
def slice_update(inputs: ArrayLike, start_indices: Sequence[Any], updates: ArrayLike) -> Array:
    """`inputs` with the block at `start_indices` replaced by `updates`.

    Args:
        inputs: The array.
        start_indices: One start index per axis.
        updates: The new block.

    Returns:
        An array of `inputs`' shape.
    """
    inputs = as_array(inputs)
    return lax.dynamic_update_slice(inputs, as_array(updates).astype(inputs.dtype),
                                    tuple(start_indices))


def _index_tuple(indices):
    return tuple(jnp.moveaxis(jnp.asarray(indices), -1, 0))


# Jitted inside: these compose several indexing ops, which eagerly would
# dispatch (and first compile) one by one.
@op
@compiled("shape")
def scatter(indices: ArrayLike, values: ArrayLike, shape: Sequence[int]) -> Array:
    """Zeros of `shape` with `values` added at `indices` (N, index_depth);
    repeated indices accumulate.

    Args:
        indices: Integer array `(N, index_depth)`.
        values: `(N, *rest)` values.
        shape: The output shape.

    Returns:
        An array of `shape`.
    """
    return jnp.zeros(shape, jnp.asarray(values).dtype).at[_index_tuple(indices)].add(values)


@op
@compiled()
def scatter_update(inputs: ArrayLike, indices: ArrayLike, updates: ArrayLike) -> Array:
    """`inputs` with the entries at `indices` (N, index_depth) set to `updates`.

    Args:
        inputs: The array to update.
        indices: Integer array `(N, index_depth)`.
        updates: `(N, *rest)` new values.

    Returns:
        An array of `inputs`' shape.
    """
    return inputs.at[_index_tuple(indices)].set(updates)


@op
@compiled("num", "axis")
def unstack(x: ArrayLike, num: int | None = None, axis: Axis = 0) -> list[Array]:
    """The slices of `x` along `axis`, as a list.

    Args:
        x: Input array.
        num: The expected number of slices (checked when given).
        axis: The axis to unstack.

    Returns:
        A list of arrays, each without `axis`.

    Raises:
        ValueError: `num` differs from the size of `axis`.
    """
    x = as_array(x)
    if num is not None and num != x.shape[axis]:
        raise ValueError(f"unstack: num={num} but axis {axis} of x {x.shape} has "
                         f"{x.shape[axis]} entries.")
    return [jnp.squeeze(part, axis) for part in jnp.split(x, x.shape[axis], axis=axis)]


# --------------------------------------------------------------------------
# Control flow
# --------------------------------------------------------------------------

def _is_wrapped(x):
    return isinstance(x, (Variable, Tensor))


def _values(tree):
    """`tree` with Variables and Tensors replaced by their arrays (for lax)."""
    return jax.tree_util.tree_map(unwrap, tree, is_leaf=_is_wrapped)


def _leaves(tree):
    return jax.tree_util.tree_leaves(tree, is_leaf=_is_wrapped)


def _followed(tree):
    tapes = _state.tapes
    return bool(tapes) and builtins.any(
        _is_wrapped(leaf) and tape._follows(leaf) for leaf in _leaves(tree) for tape in tapes)


def _refuse_followed(tree, name, what):
    if _followed(tree):
        raise ValueError(
            f"{name}: a GradientTape follows the loop state, but {what} is traced, so the "
            "loop cannot run in Python for the tape and JAX cannot reverse-differentiate "
            "a data-dependent loop. Use Python-int bounds (fori_loop) or `scan`.")


def _recording():
    return bool(_state.tapes)


def _select(pred, on_true, on_false):
    return jax.tree_util.tree_map(lambda a, b: where(pred, a, b), on_true, on_false,
                                  is_leaf=_is_wrapped)


def cond(pred: ArrayLike, true_fn: Callable, false_fn: Callable) -> Any:
    """`true_fn()` if `pred` else `false_fn()`.

    A concrete `pred` runs only the chosen branch, in Python. A traced one
    (inside `jax.jit`) is `lax.cond`, or, while a tape records, both branches
    joined by `where` so the tape can differentiate them.

    Args:
        pred: A scalar bool.
        true_fn: Function of no arguments, run when `pred` is true.
        false_fn: Function of no arguments, otherwise; both return the same structure.

    Returns:
        The chosen branch's output.
    """
    pred_value = unwrap(pred)
    if not is_tracer(pred_value):
        return true_fn() if bool(pred_value) else false_fn()
    if _recording():
        return _select(pred, true_fn(), false_fn())
    return lax.cond(pred_value, lambda: _values(true_fn()), lambda: _values(false_fn()))


def switch(index: ArrayLike, branches: Sequence[Callable], *operands: Any) -> Any:
    """`branches[index](*operands)`, `index` clamped to the valid range.

    Args:
        index: An integer scalar.
        branches: A sequence of functions, each returning the same structure.
        *operands: Arguments passed to the chosen branch.

    Returns:
        The chosen branch's output.
    """
    index_value = unwrap(index)
    last = len(branches) - 1
    if not is_tracer(index_value):
        return branches[builtins.min(builtins.max(int(index_value), 0), last)](*operands)
    if _recording():
        index = clip(index, 0, last)
        result = branches[last](*operands)
        for i in range(last - 1, -1, -1):
            result = _select(index == i, branches[i](*operands), result)
        return result
    return lax.switch(index_value, [lambda *a, f=f: _values(f(*a)) for f in branches],
                      *_values(operands))


def fori_loop(lower: int | ArrayLike, upper: int | ArrayLike, body_fun: Callable,
              init_val: Any) -> Any:
    """`val = body_fun(i, val)` for `i` in `[lower, upper)`; returns `val`.

    Args:
        lower: The first index.
        upper: The end index (excluded).
        body_fun: `body_fun(i, val) -> val`, keeping `val`'s structure, shapes and dtypes.
        init_val: The initial value (a pytree).

    Returns:
        The final `val`.
    """
    lower_value, upper_value = unwrap(lower), unwrap(upper)
    bounds_known = not (is_tracer(lower_value) or is_tracer(upper_value))
    if _recording() and bounds_known:
        val = init_val
        for i in range(int(lower_value), int(upper_value)):
            val = body_fun(i, val)
        return val
    if not bounds_known:
        _refuse_followed(init_val, "fori_loop", "a loop bound")
    return lax.fori_loop(lower_value, upper_value,
                         lambda i, v: _values(body_fun(i, v)), _values(init_val))


def while_loop(cond: Callable, body: Callable, loop_vars: Any,
               maximum_iterations: int | None = None) -> Any:
    """Runs `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`, at most
    `maximum_iterations` times. A tuple or list of loop vars is passed
    positionally and comes back as a tuple.

    Args:
        cond: `cond(*loop_vars) -> bool scalar`.
        body: `body(*loop_vars) -> loop_vars`, same structure, shapes and dtypes.
        loop_vars: The initial values (one array, or a tuple/list).
        maximum_iterations: An upper bound on the iterations (None: none).

    Returns:
        The final loop variables.
    """
    is_sequence = isinstance(loop_vars, (tuple, list))
    state = tuple(loop_vars) if is_sequence else (loop_vars,)

    def as_state(out):
        return tuple(out) if is_sequence else (out,)

    def output(state):
        return state if is_sequence else state[0]

    steps_left = maximum_iterations
    if _recording():
        while steps_left is None or steps_left > 0:
            keep_going = unwrap(cond(*state))
            if is_tracer(keep_going):  # continue as a lax loop from here
                _refuse_followed(state, "while_loop", "the loop condition")
                break
            if not keep_going:
                return output(state)
            state = as_state(body(*state))
            steps_left = None if steps_left is None else steps_left - 1
        else:
            return output(state)

    def lax_cond(carry):
        state, step = carry
        keep_going = unwrap(cond(*state))
        if steps_left is None:
            return keep_going
        return jnp.logical_and(keep_going, step < steps_left)

    def lax_body(carry):
        state, step = carry
        return _values(as_state(body(*state))), step + 1

    state, _ = lax.while_loop(lax_cond, lax_body, (_values(state), 0))
    return output(state)


def _slice_tree(tree, i):
    return jax.tree_util.tree_map(lambda a: a[i], tree, is_leaf=_is_wrapped)


def _stack_trees(trees):
    return jax.tree_util.tree_map(lambda *xs: stack(list(xs)), *trees, is_leaf=_is_wrapped)


def _leading_length(xs, length, name):
    if xs is None:
        if length is None:
            raise ValueError(f"{name}: give `xs` or `length`.")
        return length
    sizes = {leaf.shape[0] for leaf in _leaves(xs)}
    if len(sizes) != 1:
        raise ValueError(f"{name}: every array in `xs` needs the same leading axis, "
                         f"got lengths {sorted(sizes)}.")
    return sizes.pop()


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: int = 1) -> tuple[Any, Any]:
    """`carry, y = f(carry, x)` over the leading axis of `xs`; returns the
    final carry and the stacked `y`s.

    Args:
        f: `f(carry, x) -> (carry, y)`.
        init: The initial carry (a pytree).
        xs: Arrays scanned along their leading axis (None: `length` steps with `x=None`).
        length: The number of steps when `xs` is None.
        reverse: Scan from the end.
        unroll: Loop iterations to unroll, for speed.

    Returns:
        `(final_carry, stacked_ys)`.
    """
    if not _recording():
        return lax.scan(lambda c, x: _values(f(c, x)), _values(init), _values(xs),
                        length=length, reverse=reverse, unroll=unroll)
    n = _leading_length(xs, length, "scan")
    carry, ys = init, []
    for i in (reversed(range(n)) if reverse else range(n)):
        carry, y = f(carry, None if xs is None else _slice_tree(xs, i))
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, (None if not ys or ys[0] is None else _stack_trees(ys))


def map(f: Callable, xs: Any) -> Any:
    """`f` applied to each slice of `xs` along its leading axis, stacked.

    Args:
        f: Function of one slice.
        xs: An array or pytree of arrays with a common leading axis.

    Returns:
        `f`'s outputs stacked along a new leading axis.
    """
    if not _recording():
        return lax.map(lambda x: _values(f(x)), _values(xs))
    n = _leading_length(xs, None, "map")
    return _stack_trees([f(_slice_tree(xs, i)) for i in range(n)])


def vectorized_map(function: Callable, elements: Any) -> Any:
    """`function` applied to each slice of `elements` along axis 0 (jax.vmap).

    Args:
        function: Function of one slice.
        elements: An array or pytree with a common leading axis.

    Returns:
        `function`'s outputs stacked along axis 0.
    """
    if not _recording():
        return jax.vmap(lambda e: _values(function(e)))(_values(elements))
    n = _leading_length(elements, None, "vectorized_map")
    return _stack_trees([function(_slice_tree(elements, i)) for i in range(n)])


def associative_scan(f: Callable, elems: Any, reverse: bool = False, axis: Axis = 0) -> Any:
    """Inclusive scan of an associative `f` along `axis` (prefix sums for `add`).

    Args:
        f: An associative binary function of two pytrees of arrays.
        elems: A pytree of arrays with the same leading size along `axis`.
        reverse: Scan from the end.
        axis: The scanned axis.

    Returns:
        A pytree like `elems`: the running combination.
    """
    if not _recording():
        return lax.associative_scan(lambda a, b: _values(f(a, b)), _values(elems),
                                    reverse=reverse, axis=axis)
    elems = jax.tree_util.tree_map(lambda a: moveaxis(a, axis, 0), elems, is_leaf=_is_wrapped)
    n = _leading_length(elems, None, "associative_scan")
    order = list(range(n))[::-1] if reverse else list(range(n))
    acc, out = None, {}
    for i in order:
        x = _slice_tree(elems, i)
        acc = x if acc is None else (f(x, acc) if reverse else f(acc, x))
        out[i] = acc
    stacked = _stack_trees([out[i] for i in range(n)])
    return jax.tree_util.tree_map(lambda a: moveaxis(a, 0, axis), stacked, is_leaf=_is_wrapped)


__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_"))
