"""The state model: Variables and state scopes (name scopes: `naming.py`).

Everything stateful in loopax (model weights, optimizer slots, metric
accumulators, RNG seeds) is a `Variable`. A Variable is a registered JAX
pytree with one leaf, its current value, so lists of Variables pass straight
into `jax.jit`, `jax.grad` and `jax.tree_util`. The rest of it (name, path,
trainable, aggregation, constraint, autocast, layout, seed-state flag) rides in
the pytree's aux data, so a round trip keeps it, and its key path is the
Variable's `path` (see STATE.md next to this file).

A `StateScope` substitutes values for Variables while it is active and
collects assignments instead of applying them. It is the single mechanism
behind `stateless_call`, `stateless_apply`, `stateless_update_state`, the
fused training step of `fit()`, `loopax.function` and checkpoint restore:

    with StateScope({var: new_value}) as scope:
        out = layer(x)                 # reads see new_value
    updated = scope.get_current_value(var)   # assignments made inside

`pure(fn, variables)` wraps that pattern once: it turns stateful code into
`(values, *args) -> (out, new_values)`, and every stateless API uses it.

Scopes nest: a read looks in the innermost scope first, then outwards, then
at the Variable itself. Assignments go to the innermost scope (an RNG seed
state's, to the innermost scope that maps it).
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import dtypes
from loopax.src.array_types import Array, ArrayLike, DTypeLike
from loopax.src.distribution import placement
from loopax.src.naming import current_path


class _ThreadState(threading.local):
    def __init__(self):
        self.scopes: list[StateScope] = []
        # Set by loopax.src.tape while at least one GradientTape records.
        self.tapes: list = []
        # The float dtype Variables read as inside a mixed-precision layer's
        # call (see `autocast_scope`), or None.
        self.autocast_dtype = None
        # Called with each new Variable (`loopax.function` checks that Variables
        # are created on its first call only).
        self.variable_creation_hooks: list[Callable] = []
        # Called with each Layer or optimizer just built, its Variables created
        # (a deferred `tf.train.Checkpoint` restore fills them in).
        self.build_hooks: list[Callable] = []


_state = _ThreadState()


def notify_built(obj: Any) -> None:
    """Runs the build hooks on `obj`, a Layer or optimizer whose build just ended."""
    for hook in list(_state.build_hooks):
        hook(obj)


def active_scope() -> "StateScope | None":
    """The innermost active `StateScope`, or None outside any.

    Returns:
        A `StateScope` or None.
    """
    return _state.scopes[-1] if _state.scopes else None


def _assigning_scope(var: "Variable") -> "StateScope | None":
    """The scope an assignment of `var` goes to: the innermost one. An RNG seed
    state goes to the innermost scope that maps it, so a generator that a
    compiled step carries advances once per draw even through nested scopes
    that do not carry it (a `stateless_call` inside `fit`'s step)."""
    scopes = _state.scopes
    if var.is_seed_state:
        for scope in reversed(scopes):
            if id(var) in scope._values:
                return scope
    return scopes[-1] if scopes else None


@contextlib.contextmanager
def autocast_scope(dtype: DTypeLike) -> Iterator[None]:
    """While active, float Variables with `autocast=True` read as `dtype`
    (None: as their own dtype). Layers enter it around `call` under a mixed
    dtype policy; the cast is differentiable, so gradients reach the
    Variables' own (float32) values.

    Args:
        dtype: The float dtype float Variables read as, or None to turn autocasting off
            inside (nested layers with a float32 policy).

    Yields:
        Nothing; the setting holds inside the `with` block.
    """
    previous = _state.autocast_dtype
    _state.autocast_dtype = None if dtype is None else jnp.dtype(dtype)
    try:
        yield
    finally:
        _state.autocast_dtype = previous


def _autocast(var, value):
    dtype = _state.autocast_dtype
    if (dtype is None or not var.autocast or value.dtype == dtype
            or not jnp.issubdtype(value.dtype, jnp.floating)):
        return value
    return value.astype(dtype)


def is_tracer(x: Any) -> bool:
    """Whether `x` is a JAX tracer (a value inside `jit`/`grad`), not a concrete array.

    Args:
        x: Any object.

    Returns:
        `True` for a `jax.core.Tracer`.
    """
    return isinstance(x, jax.core.Tracer)


def tracing() -> bool:
    """Whether JAX is tracing a function here (a new array would be a tracer)."""
    return isinstance(jnp.zeros(()), jax.core.Tracer)


def _concrete():
    """A context in which ops give concrete arrays even while a function is traced
    (`jax.ensure_compile_time_eval`). Only entered when tracing: there it also runs
    the inside of every `jax.jit` op by op, each op a compile of its own."""
    return jax.ensure_compile_time_eval() if tracing() else contextlib.nullcontext()


# --------------------------------------------------------------------------
# The array protocol Variables and Tensors share
# --------------------------------------------------------------------------

class ArrayValue:
    """What makes an object holding one array behave like that array.

    A subclass defines `_read_value()` (the current array) and `shape`,
    `dtype`, `ndim`. Python's operators are installed on this class by
    `loopax.src.ops.operators`, so a recording GradientTape sees them.
    """

    __slots__ = ()
    # NumPy's binary operators defer to our reflected methods when the other
    # operand has a higher `__array_priority__` and no `__array_ufunc__`, so
    # `np_array - variable` comes back to loopax (and to a recording tape),
    # while NumPy functions (`np.max(t)`, `np.add(t, 1)`) convert through
    # `__array__` and return NumPy arrays, as they do on TensorFlow's tensors.
    __array_priority__ = 1000

    if TYPE_CHECKING:   # what `ops.operators` installs, and what a subclass defines
        @property
        def shape(self) -> tuple: ...
        @property
        def dtype(self) -> Any: ...
        @property
        def ndim(self) -> int: ...

        def __getitem__(self, key: Any) -> Any: ...
        def __add__(self, other: Any) -> Any: ...
        def __radd__(self, other: Any) -> Any: ...
        def __sub__(self, other: Any) -> Any: ...
        def __rsub__(self, other: Any) -> Any: ...
        def __mul__(self, other: Any) -> Any: ...
        def __rmul__(self, other: Any) -> Any: ...
        def __truediv__(self, other: Any) -> Any: ...
        def __rtruediv__(self, other: Any) -> Any: ...
        def __floordiv__(self, other: Any) -> Any: ...
        def __rfloordiv__(self, other: Any) -> Any: ...
        def __mod__(self, other: Any) -> Any: ...
        def __rmod__(self, other: Any) -> Any: ...
        def __pow__(self, other: Any) -> Any: ...
        def __rpow__(self, other: Any) -> Any: ...
        def __matmul__(self, other: Any) -> Any: ...
        def __rmatmul__(self, other: Any) -> Any: ...
        def __and__(self, other: Any) -> Any: ...
        def __rand__(self, other: Any) -> Any: ...
        def __or__(self, other: Any) -> Any: ...
        def __ror__(self, other: Any) -> Any: ...
        def __xor__(self, other: Any) -> Any: ...
        def __rxor__(self, other: Any) -> Any: ...
        def __lt__(self, other: Any) -> Any: ...
        def __le__(self, other: Any) -> Any: ...
        def __gt__(self, other: Any) -> Any: ...
        def __ge__(self, other: Any) -> Any: ...
        def __neg__(self) -> Any: ...
        def __pos__(self) -> Any: ...
        def __abs__(self) -> Any: ...
        def __invert__(self) -> Any: ...

    def _read_value(self):
        raise NotImplementedError

    @property
    def size(self) -> int:
        """The number of elements: the product of `shape` (1 for a scalar)."""
        return int(np.prod(self.shape))

    def numpy(self) -> np.ndarray:
        """The current value as a NumPy array (copied to the host).

        Returns:
            A `np.ndarray` of the same shape and dtype.
        """
        return np.asarray(self._read_value())

    def __array__(self, dtype=None, copy=None):
        check_not_followed(self)
        a = np.asarray(self._read_value())
        return a.astype(dtype) if dtype is not None else a

    @property
    def __jax_array__(self):
        # JAX's binary operators look this attribute up first. Hiding it while
        # a GradientTape follows this value makes `jax_array * variable` fall
        # back to our reflected operator, which the tape records.
        if _state.tapes and any(t._follows(self) for t in _state.tapes):
            raise AttributeError("__jax_array__")
        return self._read_value

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        return bool(self._read_value())

    def __float__(self):
        return float(self._read_value())

    def __int__(self):
        return int(self._read_value())

    def __index__(self):
        return int(self._read_value())

    # `==` is elementwise (as for arrays); these objects stay usable as dict
    # keys through identity hashing.
    def __hash__(self):
        return id(self)


# --------------------------------------------------------------------------
# Variable
# --------------------------------------------------------------------------

# Set by loopax.src.initializers: resolves an initializer name ("zeros") for
# `Variable("zeros", shape=...)`, which Keras code writes.
_initializer_lookup: Callable[[Any], Callable] | None = None


# Set by loopax.src.tensor: wraps the value an eager `assign` returns as a Tensor
# (this layer does not import the Tensor class).
_eager_result: Callable | None = None


def register_eager_result(wrap: Callable) -> None:
    """Installs `wrap(array) -> Tensor`, what an eager `Variable.assign*` returns."""
    global _eager_result
    _eager_result = wrap


def register_initializer_lookup(lookup: Callable) -> None:
    """Installs the function that turns an initializer name into an initializer.

    Args:
        lookup: `lookup(name_or_initializer) -> callable(shape, dtype)`; installed by
            `loopax.src.initializers` so this layer need not import it.
    """
    global _initializer_lookup
    _initializer_lookup = lookup


class Variable(ArrayValue):
    """A mutable, named array that is also a JAX pytree.

    Args:
        initializer: an array-like initial value, or a callable
            `initializer(shape, dtype)` (or the name of a loopax initializer
            such as `"glorot_uniform"`), in which case `shape` is required.
        shape: the shape, when `initializer` is a callable.
        dtype: the dtype; defaults to the value's dtype (Python floats and
            float64 arrays become float32, loopax's default float).
        trainable: whether optimizers and `GradientTape` treat it as a
            parameter.
        autocast: whether reads inside a mixed-precision layer's `call`
            see it cast to the layer's compute dtype (float Variables only).
        name: the variable's name; its `path` prefixes the enclosing name
            scopes (`"dense/kernel"`).
        aggregation: how a distributed strategy would combine replicas' values;
            stored for Keras compatibility, not used by loopax.

    Raises:
        ValueError: `name` contains `/`, an initializer is given without `shape`, or the
            initial value's shape differs from `shape`.
        TypeError: the initial value cannot be made an array.
        RuntimeError: the initial value is a tracer (a Variable created inside a
            compiled function).
    """

    # The value a compiled loopax.function wrote, while no one has read it:
    # the next call may donate (update in place) that buffer.
    _owned_value = None
    # A projection `constraint(value) -> value` optimizers apply after each
    # update (`Layer.add_weight(constraint=)` sets it), or None.
    constraint: Callable | None = None
    # An RNG seed state (`random.SeedGenerator.state`): carried by stateless
    # calls and fit() like any state, but not one of a layer's `weights`.
    is_seed_state: bool = False
    # Optimizers write its gradient into it instead of a step (Keras's float8
    # scales and amax histories, whose "gradient" is their next value).
    overwrite_with_gradient: bool = False
    # The TensorLayout the current distribution gave it at creation (or None).
    _layout = None
    # Whether reads inside a mixed-precision layer's call cast it to the
    # layer's compute dtype (`autocast_scope`).
    autocast = True

    def __init__(self, initializer: ArrayLike | Callable | str,
                 shape: tuple[int, ...] | None = None, dtype: DTypeLike = None,
                 trainable: bool = True, name: str | None = None,
                 aggregation: str | None = None, autocast: bool = True):
        name = name or "variable"
        if not isinstance(name, str) or "/" in name:
            raise ValueError(
                f"Variable name must be a string without '/', got {name!r}.")
        self.name = name
        parent = current_path()
        self.path = f"{parent}/{name}" if parent else name
        self.trainable = bool(trainable)
        self.aggregation = aggregation
        if not autocast:
            self.autocast = False
        dtype = dtypes.standardize(dtype) if dtype is not None else None
        with _concrete():  # concrete even while a function is traced
            if isinstance(initializer, str) or callable(initializer):
                if shape is None:
                    raise ValueError(
                        f"Variable {self.path!r}: an initializer "
                        f"({initializer!r}) needs `shape=`.")
                assert _initializer_lookup is not None, "loopax.src.initializers not imported"
                init = _initializer_lookup(initializer)   # names and classes, as Keras's
                # dtype by keyword, as Keras: an op works too
                value = init(tuple(shape), dtype=dtype or dtypes.floatx())
            else:
                value = initializer
                if isinstance(value, Variable):
                    value = value.value
            self._write(_to_value(value, dtype, self.path))
        if shape is not None and tuple(shape) != self._value.shape:
            raise ValueError(
                f"Variable {self.path!r}: initial value has shape "
                f"{self._value.shape} but shape={tuple(shape)} was given.")
        if is_tracer(self._value):
            raise RuntimeError(
                f"Variable {self.path!r} was created from a traced value "
                "inside a compiled function (jax.jit, loopax.function or "
                "fit()). Create variables before compiling, e.g. in "
                "`build()` or by calling the model once on a batch.")
        placement.on_variable_created(self)
        for hook in _state.variable_creation_hooks:
            hook(self)

    # ---- value -----------------------------------------------------------
    @property
    def value(self) -> jax.Array:
        """The current value: the one a `StateScope` substitutes, if any."""
        scopes = _state.scopes
        if scopes:
            for scope in reversed(scopes):
                v = scope._lookup(self)
                if v is not None:
                    return v if _state.autocast_dtype is None else _autocast(self, v)
        self._owned_value = None   # handed out: never donate it
        if _state.autocast_dtype is not None:
            return _autocast(self, self._value)
        return self._value

    def assign(self, value: ArrayLike, use_locking: Any = None, name: str | None = None,
               read_value: bool = True) -> Any:
        """Sets the value (shape and dtype must match).

        Inside a `StateScope` (a stateless call, `fit`'s step, `loopax.function`) the
        assignment goes to the scope; the Variable itself changes only outside any scope.

        Args:
            value: The new value, array-like with the Variable's shape; cast to its dtype.
            use_locking: Accepted for TensorFlow compatibility; unused.
            name: Accepted for TensorFlow compatibility; unused.
            read_value: False returns None (TensorFlow's `read_value=False`).

        Returns:
            The assigned value: eagerly (outside any state scope) a `loopax.Tensor`,
            so `v.assign_add(1.0).numpy()` works as in TensorFlow; inside a scope or a
            trace the `jax.Array` (or tracer).

        Raises:
            ValueError: `value`'s shape differs from the Variable's.
            RuntimeError: `value` is a tracer and no state scope is active (a bare `jax.jit`).
        """
        array: Any = _unwrap(value)
        array = dtypes.asarray(array, self.dtype) if not (
            hasattr(array, "dtype") and array.dtype == self.dtype) else array
        if not is_tracer(array):
            array = dtypes.asarray(array)
        if tuple(array.shape) != self.shape:
            raise ValueError(
                f"Cannot assign a value of shape {tuple(array.shape)} to "
                f"variable {self.path!r} of shape {self.shape}.")
        scope = _assigning_scope(self)
        if scope is not None:
            scope._assign(self, array)
        else:
            if is_tracer(array):
                raise RuntimeError(
                    f"Assigning a traced value to variable {self.path!r} "
                    "outside a state scope: inside `jax.jit` use the stateless "
                    "API (stateless_call / stateless_apply), or compile with "
                    "`loopax.function`, which writes assignments back.")
            if self._layout is not None:
                array = placement.place_assigned(array, self._layout)
            self._write(array)
            if _eager_result is not None:
                return _eager_result(array) if read_value else None
        return array if read_value else None

    def _write(self, value: Any, owned: bool = False) -> None:
        """Stores `value` as the Variable's own value, bypassing scopes and checks.

        The one place a Variable's stored array changes (`assign` outside a
        scope, and the compiled eager paths that computed a value of the right
        shape and dtype). `owned=True`: loopax holds the only reference, so the
        next compiled `loopax.function` call may donate the buffer.
        """
        self._value = value
        self._owned_value = value if owned else None

    def assign_add(self, delta: ArrayLike, use_locking: Any = None, name: str | None = None,
                   read_value: bool = True) -> Any:
        """Adds `delta` to the value (`assign(value + delta)`).

        Args:
            delta: Array-like (also a Python list, as `assign` takes), broadcastable
                to the Variable's shape.

        Returns:
            The new value, as `assign` returns it (a `loopax.Tensor` eagerly).
        """
        return self.assign(self.value + self._delta(delta), read_value=read_value)

    def assign_sub(self, delta: ArrayLike, use_locking: Any = None, name: str | None = None,
                   read_value: bool = True) -> Any:
        """Subtracts `delta` from the value (`assign(value - delta)`).

        Args:
            delta: Array-like (also a Python list, as `assign` takes), broadcastable
                to the Variable's shape.

        Returns:
            The new value, as `assign` returns it (a `loopax.Tensor` eagerly).
        """
        return self.assign(self.value - self._delta(delta), read_value=read_value)

    def _delta(self, delta):
        delta = _unwrap(delta)
        return jnp.asarray(delta, dtype=self.dtype) if isinstance(delta, (list, tuple)) else delta

    # ---- array protocol (the rest is ArrayValue's) ------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, a tuple of ints (fixed at creation)."""
        return tuple(self._value.shape)

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the stored value (reads under autocast may see another)."""
        return self._value.dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions, `len(shape)`."""
        return self._value.ndim

    def _read_value(self):
        return self.value

    def __repr__(self):
        try:
            val = np.asarray(self.value)
        except Exception:  # a tracer
            val = self.value
        return (f"<Variable path={self.path}, shape={self.shape}, "
                f"dtype={self.dtype}, trainable={self.trainable}, value={val}>")

    # ---- pytree ----------------------------------------------------------
    @classmethod
    def _from_leaf(cls, value, metadata):
        """A detached Variable holding `value` and the metadata `_metadata_of`
        took from the flattened one (what jax.tree unflattens to)."""
        v = object.__new__(cls)
        fields = v.__dict__   # filled directly: unflattening is on every step's path
        (fields["name"], fields["path"], fields["trainable"], fields["aggregation"],
         fields["autocast"], fields["is_seed_state"], constraint, layout) = metadata
        fields["constraint"] = None if constraint is None else constraint.obj
        fields["_layout"] = None if layout is None else layout.obj
        fields["_value"] = value
        return v


class _ByIdentity:
    """An object in a pytree's aux data, compared by identity: always hashable
    (a constraint may define `__eq__` without `__hash__`) and cheap to compare,
    so a jit cache keyed on the treedef hits for the same Variables."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _ByIdentity and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)

    def __repr__(self):
        return repr(self.obj)


def _metadata_of(v: "Variable") -> tuple:
    """The aux data: everything a Variable is besides its value, so that a pytree
    round trip (`jax.tree.map`, `jax.grad`, a stateless loop's flatten/unflatten)
    keeps it all; objects wrapped in `_ByIdentity`."""
    constraint, layout = v.constraint, v._layout
    return (v.name, v.path, v.trainable, v.aggregation, v.autocast, v.is_seed_state,
            None if constraint is None else _ByIdentity(constraint),
            None if layout is None else _ByIdentity(layout))


def _flatten_variable(v):
    return (v.value,), _metadata_of(v)


def _flatten_variable_with_keys(v):
    # The key names the weight: keystr gives "[0]['dense/kernel']".
    return ((jax.tree_util.DictKey(v.path), v.value),), _metadata_of(v)


def _unflatten_variable(metadata, children):
    return Variable._from_leaf(children[0], metadata)


jax.tree_util.register_pytree_with_keys(
    Variable, _flatten_variable_with_keys, _unflatten_variable, _flatten_variable)


def _to_value(value, dtype, where):
    value = _unwrap(value)
    if dtype is None:
        if isinstance(value, (bool, np.bool_)):
            dtype = jnp.bool_
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            dtype = jnp.int32
        elif isinstance(value, (float, np.floating, list, tuple)) or (
                isinstance(value, np.ndarray) and value.dtype == np.float64):
            arr = np.asarray(value)
            dtype = dtypes.floatx() if arr.dtype.kind == "f" else (
                jnp.int32 if arr.dtype.kind in "iu" and arr.dtype.itemsize == 8 else arr.dtype)
    try:
        return dtypes.asarray(value, dtype)
    except TypeError as e:
        raise TypeError(
            f"Variable {where!r}: cannot make an array of {type(value).__name__}"
            f" ({e}). Pass an array, a number, or an initializer.") from None


def check_not_followed(x: Any) -> None:
    """Refuses the implicit array conversion of a value a recording tape follows.

    `jnp.sin(x)` would otherwise convert `x` to a constant through
    `__array__`, and the tape would silently miss that part of the gradient.

    Args:
        x: The value being converted (a Variable or Tensor).

    Raises:
        TypeError: a recording GradientTape follows `x`.
    """
    if _state.tapes and any(t._follows(x) for t in _state.tapes):
        raise TypeError(
            f"A {type(x).__name__} that a recording GradientTape follows was passed "
            "to a jax.numpy / NumPy function or a JAX transformation, which the tape "
            "cannot see (its gradient would be silently missing). Use the loopax.ops "
            "function of the same name (loopax.ops.sin, not jnp.sin) or Python "
            "operators, which the tape records; for the value itself, call .numpy().")


def _unwrap(x):
    """The array behind a Variable or loopax Tensor; anything else unchanged."""
    if isinstance(x, Variable):
        return x.value
    v = getattr(x, "_loopax_value", None)
    return x if v is None else v



# --------------------------------------------------------------------------
# StateScope
# --------------------------------------------------------------------------

class StateScope:
    """Substitutes values for Variables and collects their assignments, and the
    `add_loss` values of the layer calls made inside it.

    Losses: `losses` holds `(layer, value)` for each `add_loss` inside the scope,
    in order. An outermost layer call inside drops its layers' earlier ones
    (`clear_losses`); on exit the scope hands its losses to the enclosing scope
    (the call's losses replacing the enclosing scope's of the same layers), and
    the outermost scope's go with it, so a traced value never outlives its trace.

    Args:
        state_mapping: pairs `(variable, value)` (or a dict) whose values
            reads return while the scope is active.
        on_missing: optional callback `on_missing(variable)` called when a
            Variable that no enclosing scope maps is read or assigned; used by
            `loopax.function` to discover the state a function touches.
    """

    def __init__(self, state_mapping: Iterable = (), on_missing: Callable | None = None):
        if isinstance(state_mapping, dict):
            state_mapping = state_mapping.items()
        self._values: dict[int, tuple[Variable, Any]] = {}
        self._assigned: dict[int, Variable] = {}
        self.on_missing = on_missing
        self.losses: list[tuple[Any, Any]] = []   # (layer, value) of each add_loss
        self._cleared: set[int] = set()   # ids of layers whose losses before are void
        for var, value in state_mapping:
            if not isinstance(var, Variable):
                raise TypeError(
                    f"StateScope maps Variables to values; got a key of type "
                    f"{type(var).__name__}.")
            value = _unwrap(value)
            if not hasattr(value, "shape"):
                value = jnp.asarray(value, dtype=var.dtype)
            self._values[id(var)] = (var, value)

    def _lookup(self, var):
        hit = self._values.get(id(var))
        if hit is not None:
            return hit[1]
        if self.on_missing is not None and not any(
                id(var) in s._values for s in _state.scopes if s is not self):
            self.on_missing(var)
        return None

    def _assign(self, var, value):
        if self.on_missing is not None and id(var) not in self._values:
            self.on_missing(var)
        self._values[id(var)] = (var, value)
        self._assigned[id(var)] = var

    def get_current_value(self, var: Variable) -> Array | None:
        """The value `var` has inside this scope (assigned or substituted), or None.

        Args:
            var: A Variable.

        Returns:
            Its array in this scope, or None when the scope neither maps nor assigned it.
        """
        hit = self._values.get(id(var))
        return None if hit is None else hit[1]

    @property
    def assigned_variables(self) -> list[Variable]:
        """The Variables assigned inside this scope, in first-assignment order."""
        return list(self._assigned.values())

    def clear_losses(self, layers: Iterable[Any]) -> None:
        """Drops the losses `layers` added so far, here and (on exit) in the
        enclosing scopes: an outermost call of theirs starts afresh."""
        ids = {id(layer) for layer in layers}
        self.losses = [(o, v) for o, v in self.losses if id(o) not in ids]
        self._cleared |= ids

    @staticmethod
    def visible_losses() -> list[tuple[Any, Any]]:
        """The `(layer, value)` losses the active scopes hold that are still current
        (not dropped by an outermost call in a scope inside), outermost first."""
        void: set[int] = set()
        found = []
        for scope in reversed(_state.scopes):
            found.append([(o, v) for o, v in scope.losses if id(o) not in void])
            void |= scope._cleared
        return [entry for entries in reversed(found) for entry in entries]

    def take_losses(self) -> list[tuple[Any, Any]]:
        """The `(layer, value)` losses added inside, removed from the scope (a caller
        that returns them out of a trace of its own, as the tape and remat do)."""
        losses, self.losses, self._cleared = self.losses, [], set()
        return losses

    def __enter__(self):
        _state.scopes.append(self)
        return self

    def __exit__(self, *exc):
        _state.scopes.remove(self)
        parent = _state.scopes[-1] if _state.scopes else None
        if parent is not None and (self.losses or self._cleared):
            parent.losses = [(o, v) for o, v in parent.losses
                             if id(o) not in self._cleared] + self.losses
            parent._cleared |= self._cleared
        return False


def check_values_match(variables: list[Variable], values: Iterable[ArrayLike], what: str,
                       owner: str) -> list[ArrayLike]:
    """Raises a clear error unless `values` fits `variables` one to one.

    `what` names the argument ("trainable_variables"), `owner` the object
    whose stateless API was called.

    Args:
        variables: The expected Variables, in order.
        values: One array (or Variable) per Variable.
        what: The argument's name, for the error message.
        owner: The object whose API was called, for the error message.

    Returns:
        `values` as a list.

    Raises:
        ValueError: the number of values or a value's shape does not match.
    """
    values = list(values)
    if len(values) != len(variables):
        expected = "\n".join(f"  {i}: {v.path} {v.shape} {v.dtype}"
                             for i, v in enumerate(variables))
        raise ValueError(
            f"{owner}: `{what}` has {len(values)} entries but {len(variables)} "
            f"were expected, in this order (pass `{owner.split('.')[0]}."
            f"{what}` or the values a previous stateless call returned):\n"
            f"{expected}")
    for i, (var, val) in enumerate(zip(variables, values)):
        shape = tuple(getattr(_unwrap(val), "shape", np.shape(val)))
        if shape != var.shape:
            raise ValueError(
                f"{owner}: `{what}[{i}]` has shape {shape} but variable "
                f"{var.path!r} has shape {var.shape}.")
    return values


def pure(fn: Callable, variables: Iterable[Variable], on_missing: Callable | None = None
         ) -> Callable:
    """`fn`, which reads and assigns `variables`, as a pure function of their values.

    Returns `run(values, *args, **kwargs) -> (fn's output, new_values)`:
    `values` (one per variable, arrays or Variables) are what reads see while
    `fn(*args, **kwargs)` runs; `new_values` are the variables' values after
    it (assigned, or as given). The Variables themselves are not changed, so
    `run` works under `jax.jit`, `jax.grad` and `lax.cond`. `on_missing` is
    `StateScope`'s (called for a Variable that no scope maps).

    Args:
        fn: A function that may read and assign `variables`.
        variables: The Variables `fn` touches, in the order of `values` and `new_values`.
        on_missing: Optional `on_missing(variable)` callback for Variables outside
            `variables` that `fn` reads or assigns.

    Returns:
        The function `run(values, *args, **kwargs) -> (output, new_values)`.
    """
    variables = list(variables)

    def run(values, *args, **kwargs):
        with StateScope(zip(variables, values), on_missing=on_missing) as scope:
            out = fn(*args, **kwargs)
        return out, [scope.get_current_value(v) for v in variables]

    return run


# Keras's name for the same mechanism (`keras.StatelessScope(state_mapping)`).
StatelessScope = StateScope
