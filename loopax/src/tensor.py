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

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import state
from loopax.src.state import Variable, _state, install_operators


class Tensor:
    """An immutable array value that a `GradientTape` can follow.

    Behaves like an array: `.shape`, `.dtype`, `.numpy()`, `np.asarray(t)`,
    Python operators, indexing. Passing a Tensor to `jax.jit` or any JAX
    transformation works (it is a pytree with one leaf). A `jax.numpy`
    function applied to a Tensor that a tape is recording raises a TypeError,
    because JAX cannot report that computation to the tape; use the
    `loopax.ops` function of the same name instead.
    """

    __slots__ = ("_loopax_value", "__weakref__")
    __array_priority__ = 1000
    __array_ufunc__ = None

    def __init__(self, value):
        self._loopax_value = value

    @property
    def value(self):
        return self._loopax_value

    @property
    def shape(self):
        return tuple(self._loopax_value.shape)

    @property
    def dtype(self):
        return self._loopax_value.dtype

    @property
    def ndim(self):
        return self._loopax_value.ndim

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def T(self):
        from loopax.src.ops import numpy as lnp
        return lnp.transpose(self)

    def numpy(self):
        return np.asarray(self._loopax_value)

    def __array__(self, dtype=None, copy=None):
        state.check_not_followed(self)
        a = np.asarray(self._loopax_value)
        return a.astype(dtype) if dtype is not None else a

    @property
    def __jax_array__(self):
        # JAX's binary operators look this attribute up first: hiding it while
        # a tape follows this Tensor makes `jax_array - tensor` fall back to
        # our reflected operator (and so be recorded).
        if _state.tapes and any(t._follows(self) for t in _state.tapes):
            raise AttributeError("__jax_array__")
        return self._get_value

    def _get_value(self):
        return self._loopax_value

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        return bool(self._loopax_value)

    def __float__(self):
        return float(self._loopax_value)

    def __int__(self):
        return int(self._loopax_value)

    def __index__(self):
        return int(self._loopax_value)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __format__(self, spec):
        return format(np.asarray(self._loopax_value), spec) if spec else str(self)

    def __repr__(self):
        v = self._loopax_value
        if isinstance(v, jax.core.Tracer):
            return f"<Tensor traced shape={self.shape} dtype={self.dtype}>"
        return f"Tensor({np.asarray(v)}, shape={self.shape}, dtype={self.dtype})"

    __str__ = __repr__


install_operators(Tensor)
Tensor.__hash__ = lambda self: id(self)

def _flatten_tensor(t):
    # jnp functions are jitted: they flatten their arguments, which would
    # hide a recorded Tensor's use from the tape. Refuse while one follows it.
    state.check_not_followed(t)
    return (t._loopax_value,), None


jax.tree_util.register_pytree_node(Tensor, _flatten_tensor, lambda _, c: Tensor(c[0]))


_WRAPPED = (Variable, Tensor)


def unwrap(x):
    """The array behind a Variable or Tensor (one level into lists/tuples)."""
    if isinstance(x, Tensor):
        return x._loopax_value
    if isinstance(x, Variable):
        return x.value
    if type(x) in (list, tuple) and any(isinstance(e, _WRAPPED) for e in x):
        return type(x)(unwrap(e) for e in x)
    return x


def op(fn=None, *, tensor_out=True):
    """Makes `fn` (a pure function of arrays) a loopax op.

    The op accepts Variables and Tensors wherever `fn` takes arrays, and a
    recording GradientTape records it. Called eagerly with a Tensor or
    Variable as a positional argument it returns a Tensor (unless
    `tensor_out=False`, for conversions to arrays); otherwise (plain arrays,
    or inside `jax.jit`/`grad`) a `jax.Array`. `fn` must be pure and traceable by JAX;
    array arguments are found anywhere in its positional and keyword
    arguments, everything else is treated as static.
    """

    if fn is None:
        return functools.partial(op, tensor_out=tensor_out)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _state.tapes:
            from loopax.src import tape
            return tape.record(fn, args, kwargs)
        wrapped = False
        for a in args if tensor_out else ():
            if isinstance(a, _WRAPPED):
                wrapped = True
                break
        args = [unwrap(a) for a in args]
        if kwargs:
            kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        try:
            out = fn(*args, **kwargs)
        except Exception:
            # An op called on symbolic tensors (functional API) becomes a layer
            # call; checked only after a failure, so it costs nothing otherwise.
            from loopax.src.layers.symbolic import any_symbolic
            if any_symbolic((args, kwargs)):
                from loopax.src.ops.symbolic_op import call_on_symbolic
                return call_on_symbolic(fn, args, kwargs)
            raise
        if wrapped and isinstance(out, jax.Array) and not isinstance(out, jax.core.Tracer):
            # Eager Tensor/Variable in, Tensor out (as in TensorFlow), so
            # `(w * x + b).numpy()` works; under JAX transformations ops
            # return plain arrays.
            return Tensor(out)
        return out

    wrapper.__loopax_op__ = fn
    return wrapper


def constant(value, dtype=None, shape=None):
    """A `Tensor` holding `value` (like `tf.constant`).

    Python floats and float64 NumPy arrays become float32, loopax's default.
    `shape` broadcasts a scalar value.
    """
    value = unwrap(value)
    if dtype is None and (isinstance(value, float) or (
            isinstance(value, (np.ndarray, list, tuple)) and np.asarray(value).dtype == np.float64)):
        dtype = "float32"
    if dtype is None and isinstance(value, (np.ndarray, list, tuple)) and np.asarray(value).dtype == np.int64:
        dtype = "int32"
    arr = jnp.asarray(value, dtype=dtype)
    if shape is not None:
        arr = jnp.broadcast_to(arr, tuple(shape))
    return Tensor(arr)
