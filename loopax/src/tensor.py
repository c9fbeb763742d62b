"""`Tensor`, loopax's eager tensor, and `op`, how loopax ops are defined.

Without a recording `GradientTape`, loopax ops take arrays, Variables and
Tensors and return plain `jax.Array`s: no wrapper, no cost. While a tape
records, an op whose inputs the tape follows returns a `Tensor` that the tape
knows, so the tape can differentiate the program afterwards. Python operators
on Tensors and Variables route through loopax ops, on either side of NumPy
arrays, JAX arrays and scalars.

`loopax.constant(x)` also returns a Tensor, so `tape.watch(x)` has an object
to follow (as in TensorFlow).
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import dtypes, state
from loopax.src.array_types import ArrayLike, DTypeLike
from loopax.src.state import ArrayValue, Variable, _state


class TensorShape(tuple):
    """A shape whose entries may be None (unknown): a tuple of ints with
    TensorFlow's `as_list()`, `rank`, `num_elements()`, `is_fully_defined()` and
    `is_compatible_with()`. `Tensor.shape` is one; indexing gives ints, and it
    compares (and hashes) as the tuple it is. A JAX pytree like a tuple."""

    def __new__(cls, dims):
        if dims is None:
            raise ValueError("loopax.tf: shapes of unknown rank are not supported; give "
                             "the number of axes (None for an unknown size).")
        if isinstance(dims, int):
            dims = (dims,)
        return super().__new__(cls, (None if d is None else int(d) for d in dims))

    @property
    def rank(self) -> int:
        """The number of axes."""
        return len(self)

    ndims = rank

    @property
    def dims(self) -> list:
        """The sizes, as a list (None where unknown)."""
        return list(self)

    def as_list(self) -> list:
        """The sizes, as a list of ints (None where unknown)."""
        return list(self)

    def num_elements(self):
        """The number of elements (1 for a scalar), or None when a size is unknown."""
        if None in self:
            return None
        return int(np.prod(self, dtype=np.int64))

    def is_fully_defined(self) -> bool:
        """Whether every size is known."""
        return None not in self

    def is_compatible_with(self, other) -> bool:
        """Whether `other` has the same rank and equal sizes where both are known."""
        other = tuple(other)
        return len(other) == len(self) and all(
            a is None or b is None or a == b for a, b in zip(self, other))

    def concatenate(self, other) -> "TensorShape":
        """This shape followed by `other`'s axes."""
        return TensorShape(tuple(self) + tuple(other))

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return TensorShape(item) if isinstance(key, slice) else item

    def __add__(self, other):
        return TensorShape(tuple(self) + tuple(other))

    def __radd__(self, other):
        return TensorShape(tuple(other) + tuple(self))

    def __repr__(self):
        return f"TensorShape({list(self)})"

    def __str__(self):   # `print(x.shape)` shows `(1, 2)`, as TensorFlow's
        return str(tuple(self))


jax.tree_util.register_pytree_node(
    TensorShape, lambda s: (tuple(s), None), lambda _, dims: TensorShape(dims))


def device_name(array) -> str:
    """TensorFlow's full name of the device holding `array`
    (`/job:localhost/replica:0/task:0/device:CPU:0`); "" for a traced value."""
    try:
        devices = sorted(array.devices(), key=lambda d: d.id)
    except Exception:   # a tracer, or no device
        return ""
    if not devices:
        return ""
    d = devices[0]
    return f"/job:localhost/replica:0/task:{d.process_index}/device:{d.platform.upper()}:{d.id}"


# Attributes JAX itself probes on values (`aval`: a JAX type check); a Tensor is
# not a jax.Array to JAX, so they are not taken from the array it holds.
_NOT_DELEGATED = frozenset({"aval"})


class Tensor(ArrayValue):
    """An immutable array value that a `GradientTape` can follow.

    Behaves like an array: `.shape`, `.dtype`, `.numpy()`, `np.asarray(t)`,
    Python operators, indexing. Passing a Tensor to `jax.jit` or any JAX
    transformation works (it is a pytree with one leaf). A `jax.numpy`
    function applied to a Tensor that a tape is recording raises a TypeError,
    because JAX cannot report that computation to the tape; use the
    `loopax.ops` function of the same name instead.

    Args:
        value: The `jax.Array` it holds (use `loopax.constant` to make one from any
            array-like).
    """

    # `_keras_mask`: the Keras mask a layer's eager output carries (layers/masking.py).
    __slots__ = ("_loopax_value", "_keras_mask", "__weakref__")

    def __init__(self, value):
        self._loopax_value = value

    @property
    def value(self):
        return self._loopax_value

    @property
    def shape(self) -> TensorShape:
        """The shape, a `TensorShape` (a tuple of ints with `as_list()`, `rank`,
        `num_elements()`)."""
        return TensorShape(self._loopax_value.shape)

    @property
    def device(self) -> str:
        """The device holding the value, named as TensorFlow names it
        (`/job:localhost/replica:0/task:0/device:CPU:0`)."""
        return device_name(self._loopax_value)

    @property
    def dtype(self):
        return self._loopax_value.dtype

    @property
    def ndim(self) -> int:
        return self._loopax_value.ndim

    def _read_value(self):
        return self._loopax_value

    def __getattr__(self, name):
        # Called only for names Tensor lacks: the public attributes of the
        # `jax.Array` it holds (`.at`, `.astype`, `.reshape`, `.sum()`,
        # `.block_until_ready()`, `.sharding`), so code written for Keras on JAX,
        # which treats a layer's output as a `jax.Array`, keeps working.
        if name.startswith("_") or name in _NOT_DELEGATED:
            raise AttributeError(f"'Tensor' object has no attribute {name!r}")
        try:
            value = object.__getattribute__(self, "_loopax_value")
        except AttributeError:
            raise AttributeError(f"'Tensor' object has no attribute {name!r}") from None
        try:
            attr = getattr(value, name)
        except AttributeError:
            raise AttributeError(
                f"'Tensor' object has no attribute {name!r} (nor has the jax.Array "
                f"it holds, `tensor.value`)") from None
        if _state.tapes and any(t._follows(self) for t in _state.tapes):
            # jax.Array methods bypass a recording tape (AttributeError, not TypeError:
            # JAX probes attributes with hasattr).
            raise AttributeError(
                f"'Tensor' object has no attribute {name!r} while a recording "
                f"GradientTape follows it: the jax.Array's `{name}` would bypass the "
                f"tape; use the loopax.ops function of that name.")
        return attr

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def set_shape(self, shape: Any) -> None:
        """TensorFlow's `set_shape`: checks that `shape` (None entries: any size, None:
        any shape) fits this tensor's shape, which is always known here; changes nothing.

        Raises:
            ValueError: the shapes are incompatible.
        """
        if shape is None or getattr(shape, "rank", 0) is None:
            return
        wanted = [None if d is None else int(d) for d in shape]
        have = tuple(self.shape)
        if len(wanted) != len(have) or any(w is not None and w != h
                                           for w, h in zip(wanted, have)):
            raise ValueError(f"Tensor's shape {have} is not compatible with supplied shape "
                             f"{tuple(wanted)}.")

    def __format__(self, spec):
        return format(np.asarray(self._loopax_value), spec) if spec else str(self)

    def __repr__(self):
        return self._loopax_repr()

    def __str__(self):
        return self._loopax_repr()

    def _loopax_repr(self):
        v = self._loopax_value
        if isinstance(v, jax.core.Tracer):
            return f"<Tensor traced shape={tuple(self.shape)} dtype={self.dtype}>"
        return f"Tensor({np.asarray(v)}, shape={tuple(self.shape)}, dtype={self.dtype})"


class EagerTensor(Tensor):
    """The Tensor of TensorFlow code: what `loopax.tf`'s ops, functions and tapes and
    `tf.data`'s iteration return, and ops on one (or on a `tf.Variable`) give. The
    same Tensor in every way but its text, which (once `loopax.tf` is imported) is
    TensorFlow's: `tf.Tensor([1 2], shape=(2,), dtype=int32)` for `str`,
    `<tf.Tensor: shape=(2,), dtype=int32, numpy=array([1, 2], dtype=int32)>` for
    `repr`, and NumPy's for `f"{t}"`.
    """

    __slots__ = ()
    _tensorflow_text = True   # results of ops on it are EagerTensors (`op`)

    def __repr__(self):
        text = _hooks["format"]
        return self._loopax_repr() if text is None else text(self, is_repr=True)

    def __str__(self):
        text = _hooks["format"]
        return self._loopax_repr() if text is None else text(self, is_repr=False)

    def __format__(self, spec):
        if not spec and _hooks["format"] is None:
            return str(self)
        return format(np.asarray(self._loopax_value), spec)

    def numpy(self) -> np.ndarray | np.generic:
        """The value as NumPy: an array, or a NumPy scalar for a 0-d tensor (as
        TensorFlow's `numpy()`)."""
        array = super().numpy()
        return array[()] if isinstance(array, np.ndarray) and array.ndim == 0 else array



def _flatten_tensor(t):
    # jnp functions are jitted: they flatten their arguments, which would
    # hide a recorded Tensor's use from the tape. Refuse while one follows it.
    state.check_not_followed(t)
    return (t._loopax_value,), None


jax.tree_util.register_pytree_node(Tensor, _flatten_tensor, lambda _, c: Tensor(c[0]))
jax.tree_util.register_pytree_node(EagerTensor, _flatten_tensor,
                                   lambda _, c: EagerTensor(c[0]))
state.register_eager_result(Tensor)


def eager_tensors(tree, carry=None):
    """`tree` with each concrete `jax.Array` as a `Tensor` (what an eager layer call
    or metric result gives); tracers, Tensors, NumPy arrays and other leaves are
    unchanged. `carry(array, tensor)` moves what the array held (a layer's Keras mask).
    Once `loopax.tf` is imported (a TensorFlow program) they are `EagerTensor`s, which
    print as TensorFlow's `tf.Tensor(...)`, as tf.keras layer outputs do."""
    kind = Tensor if _hooks["format"] is None else EagerTensor

    def wrap(value):
        if not isinstance(value, jax.Array) or isinstance(value, jax.core.Tracer):
            return value
        tensor = kind(value)
        if carry is not None:
            carry(value, tensor)
        return tensor
    if isinstance(tree, jax.Array):
        return wrap(tree)
    return jax.tree_util.tree_map(wrap, tree, is_leaf=lambda x: isinstance(x, Tensor))


_WRAPPED = (Variable, Tensor)

# Hooks the higher layers install (this module never imports them):
# - `record(fn, args, kwargs)`: how a recording GradientTape runs an op
#   (loopax.src.tape);
# - `call_on_symbolic(fn, args, kwargs)`: the functional API's fallback for an
#   op called on symbolic tensors; returns NotImplemented when no argument is
#   symbolic (loopax.src.layers.op_layer).
# - `format(tensor, is_repr)`: how EagerTensors print, once `loopax.tf` installs
#   TensorFlow's `tf.Tensor(...)` (loopax.src.tf_compat.tensors); None: loopax's own.
_hooks = {"record": None, "call_on_symbolic": None, "format": None}


def register_tape_recorder(record) -> None:
    """Installs the function that records an op while a GradientTape records."""
    _hooks["record"] = record


def register_symbolic_fallback(call_on_symbolic) -> None:
    """Installs the function an op falls back to when it fails on symbolic tensors."""
    _hooks["call_on_symbolic"] = call_on_symbolic


def register_tensor_format(format_tensor) -> None:
    """Installs `format_tensor(tensor, is_repr)`, the text of `repr` and `str` of
    EagerTensors (None: loopax's own)."""
    _hooks["format"] = format_tensor


def as_tensor(x):
    """`x` as a Tensor when it is a concrete JAX or NumPy array; anything else
    (tracers, Tensors, Variables, Python values) unchanged."""
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        return Tensor(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return Tensor(dtypes.asarray(x))
    return x


def as_tensors(tree):
    """`as_tensor` on every leaf of a pytree (Tensors and Variables are leaves):
    what TensorFlow-style results (gradients, `loopax.function` outputs) return
    eagerly, so that `.numpy()` works and a tape can watch them."""
    return jax.tree_util.tree_map(as_tensor, tree, is_leaf=lambda x: isinstance(x, _WRAPPED))


def unwrap(x):
    """The array behind a Variable or Tensor (one level into lists/tuples)."""
    if isinstance(x, Tensor):
        return x._loopax_value
    if isinstance(x, Variable):
        return x.value
    if type(x) in (list, tuple) and any(isinstance(e, _WRAPPED) for e in x):
        return type(x)(unwrap(e) for e in x)
    return x


def op(fn=None, *, tensor_out=True, differentiable=True):
    """Makes `fn` (a pure function of arrays) a loopax op.

    The op accepts Variables and Tensors wherever `fn` takes arrays, and a
    recording GradientTape records it. Called eagerly with a Tensor or
    Variable as a positional argument it returns a Tensor (unless
    `tensor_out=False`, for conversions to arrays); otherwise (plain arrays,
    or inside `jax.jit`/`grad`) a `jax.Array`. `fn` must be pure and traceable by JAX;
    array arguments are found anywhere in its positional and keyword
    arguments, everything else is treated as static. `differentiable=False`
    (`stop_gradient`): a GradientTape treats the op's outputs as constants, so
    what reaches a target only through it is unconnected.
    """

    if fn is None:
        return functools.partial(op, tensor_out=tensor_out, differentiable=differentiable)
    if not differentiable:
        fn.__loopax_no_gradient__ = True

    def dispatch(args, kwargs):
        if _is_shape_arithmetic(args, kwargs):
            # `tf.shape(x)[0] * 2` inside a compiled step: computed now, so the
            # result stays a concrete int that can size arrays (XLA's shapes are static).
            with state._concrete():
                out = fn(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
            return _result_type(args)(out) if isinstance(out, jax.Array) else out
        if _state.tapes:
            return _hooks["record"](fn, args, kwargs)
        wrapped = False
        for a in args if tensor_out else ():
            if isinstance(a, _WRAPPED):
                wrapped = True
                break
        result_type = _result_type(args) if wrapped else Tensor
        args = [unwrap(a) for a in args]
        if kwargs:
            kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        try:
            out = fn(*args, **kwargs)
        except Exception:
            # An op called on symbolic tensors (functional API) becomes a layer
            # call; checked only after a failure, so it costs nothing otherwise.
            fallback = _hooks["call_on_symbolic"]
            out = NotImplemented if fallback is None else fallback(fn, args, kwargs)
            if out is NotImplemented:
                raise
            return out
        if wrapped and isinstance(out, jax.Array) and not isinstance(out, jax.core.Tracer):
            # Eager Tensor/Variable in, Tensor out (as in TensorFlow), so
            # `(w * x + b).numpy()` works; under JAX transformations ops
            # return plain arrays.
            return result_type(out)
        return out

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return dispatch(args, kwargs)
        except Exception:
            # Keras's ops take Python lists of numbers (`ops.sum([1, 2, 3])`),
            # jax.numpy does not: after a failure, once more with them as arrays
            # (eagerly, under a tape and on symbolic tensors alike).
            converted = _sequences_as_arrays(args)
            if converted is None:
                _refuse_text(fn, args, kwargs)
                raise
            try:
                return dispatch(converted, kwargs)
            except Exception:
                pass
            raise

    wrapper.__loopax_op__ = fn
    return wrapper


def _result_type(args):
    """The Tensor type of an op's eager result: an EagerTensor when TensorFlow code
    made an argument (an EagerTensor or a `tf.Variable`), else a Tensor."""
    for a in args:
        if getattr(a, "_tensorflow_text", False):
            return EagerTensor
    return Tensor


_SHAPE_SIZE = 16   # at most this many entries: shapes and their parts, not data


def _small_int(x):
    v = x._loopax_value if isinstance(x, Tensor) else x
    return (isinstance(v, (jax.Array, np.ndarray)) and not isinstance(v, jax.core.Tracer)
            and v.dtype.kind in "iu" and v.size <= _SHAPE_SIZE)


def _is_shape_arithmetic(args, kwargs):
    """Whether an op computes on shapes: a small concrete integer Tensor among its
    arguments (`tf.shape(x)`'s result, or a part of it), and every other argument
    a Python int, slice or small concrete integer array."""
    if not any(isinstance(a, Tensor) and _small_int(a) for a in args):
        return False
    leaves = jax.tree_util.tree_leaves((args, kwargs), is_leaf=lambda x: isinstance(x, Tensor))
    return all(_small_int(v) or v is None or v is Ellipsis
               or (isinstance(v, (int, slice, np.integer)) and not isinstance(v, bool))
               for v in leaves)


def _is_text_tensor(x):
    return isinstance(x, Tensor) and isinstance(x._loopax_value, np.ndarray) \
        and x._loopax_value.dtype.kind in "OSU"


def _refuse_text(fn, args, kwargs):
    """After an op failed: a clear error when a string tensor (held on the host) was
    among its arguments."""
    values = list(args) + list(kwargs.values())
    values += [v for a in values if isinstance(a, (list, tuple)) for v in a]
    if any(_is_text_tensor(v) for v in values):
        raise TypeError(
            f"The op `{fn.__name__}` got a string tensor: strings stay on the host (XLA "
            "computes on numbers only). Use the tf.strings ops on them, or map the text to "
            "numbers first (tf.strings.to_number, TextVectorization or StringLookup in the "
            "input pipeline).") from None


def _is_number_sequence(value):
    if isinstance(value, (list, tuple)):
        return len(value) > 0 and all(_is_number_sequence(v) for v in value)
    return isinstance(value, (int, float, complex, bool, np.number, np.bool_))


def _sequences_as_arrays(args):
    """`args` with positional Python lists of numbers as NumPy arrays; None when
    there is none."""
    if not any(isinstance(a, list) and _is_number_sequence(a) for a in args):
        return None
    return [np.asarray(a) if isinstance(a, list) and _is_number_sequence(a) else a
            for a in args]


def constant(value: ArrayLike, dtype: DTypeLike = None, shape: Sequence[int] | None = None,
             name: str | None = None) -> Tensor:
    """A `Tensor` holding `value` (like `tf.constant`).

    Python floats and float64 NumPy arrays become float32, loopax's default; int64
    NumPy arrays become int32.

    Args:
        value: An array-like, a Variable or a Tensor.
        dtype: The dtype; default inferred as above.
        shape: A shape to broadcast `value` to (e.g. a scalar to a full array).
        name: Accepted for TensorFlow compatibility (a graph op's name there); unused.

    Returns:
        A `Tensor` of shape `shape` (or `value`'s shape).
    """
    value = unwrap(value)
    if dtype is None and (
        isinstance(value, float)
        or (isinstance(value, (np.ndarray, list, tuple)) and np.asarray(value).dtype == np.float64)
    ):
        dtype = "float32"
    if (
        dtype is None
        and isinstance(value, (np.ndarray, list, tuple))
        and np.asarray(value).dtype == np.int64
    ):
        dtype = "int32"
    arr = dtypes.asarray(value, dtype=dtype)
    if shape is not None:
        arr = jnp.broadcast_to(arr, tuple(shape))
    return Tensor(arr)
