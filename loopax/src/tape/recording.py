"""Recording: what a tape does for each loopax op it follows.

An op whose inputs a recording tape follows runs eagerly and appends one
`_Node` (fn, static structure of its arguments, input and output Tensors) to
every tape that follows it. A Variable input is *read*: its value becomes a
fresh Tensor the tape remembers as a read of that Variable. Static (non-array)
arguments become hashable keys (`static_key`): the structure a compiled
replay is cached under.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import types
from typing import Any

import jax
import numpy as np

from loopax.src.state import StateScope, Variable, _state
from loopax.src.tape.bounded_cache import BoundedCache
from loopax.src.tensor import Tensor, register_tape_recorder

_WRAPPED = (Variable, Tensor)
_ARRAYS = (jax.Array, np.ndarray, np.generic)


def _is_wrapped(x):
    return isinstance(x, _WRAPPED)


class _Dynamic:
    """Marks where an array goes in a node's argument template."""

    def __repr__(self):
        return "<dynamic>"


_DYN = _Dynamic()


@contextlib.contextmanager
def _suspended():
    """No tape records inside (used while running recorded code eagerly)."""
    saved = _state.tapes
    _state.tapes = []
    try:
        yield
    finally:
        _state.tapes = saved


# --------------------------------------------------------------------------
# Hashable keys for static values (the cache key of a recorded program)
# --------------------------------------------------------------------------

_PLAIN = (int, float, complex, str, bytes, type(None), np.dtype,
          jax.tree_util.PyTreeDef)


def static_key(x: Any) -> Any:
    """A hashable stand-in for a static argument.

    Plain values compare by value; any other object by identity (whoever
    caches under this key keeps the object alive, so its id stays unique).
    """
    if isinstance(x, _PLAIN):
        return (type(x), x)
    if type(x) is tuple:
        return ("tuple",) + tuple(static_key(e) for e in x)
    if isinstance(x, slice):
        return ("slice", static_key(x.start), static_key(x.stop), static_key(x.step))
    if isinstance(x, types.MethodType):
        return ("method", id(x.__self__), id(x.__func__))
    return ("obj", id(x))


def _template_key(template):
    return tuple(static_key(x) for x in template)


# --------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------

class _Node:
    """One recorded call: `fn(*args, **kwargs)` rebuilt from `template`."""

    __slots__ = ("fn", "structure", "treedef", "template", "positions", "inputs", "outputs")

    def __init__(self, fn, structure, treedef, template, positions, inputs, outputs):
        self.fn, self.structure, self.treedef = fn, structure, treedef
        self.template, self.positions = template, positions
        self.inputs, self.outputs = inputs, outputs   # Tensors / arrays; Tensor or None


def _split_leaves(leaves):
    """(template, positions of the dynamic leaves)."""
    template, positions = [], []
    for i, x in enumerate(leaves):
        if isinstance(x, _WRAPPED) or isinstance(x, _ARRAYS):
            template.append(_DYN)
            positions.append(i)
        else:
            template.append(x)
    return tuple(template), tuple(positions)


def _fill(treedef, template, positions, values):
    leaves = list(template)
    for p, v in zip(positions, values):
        leaves[p] = v
    return jax.tree_util.tree_unflatten(treedef, leaves)


def _call(fn, treedef, template, positions, values):
    a, k = _fill(treedef, template, positions, values)
    with _suspended():
        return fn(*a, **k)


def _following(leaves, extra_variables=()):
    """The recording tapes that follow any of these leaves."""
    return [t for t in _state.tapes
            if any(t._follows(x) for x in leaves if isinstance(x, _WRAPPED))
            or any(t._follows(v) for v in extra_variables)]


def _read_value(var, value, tapes):
    """A read of `var` (its `value` now) as a Tensor each following tape notes."""
    read = Tensor(value)
    for t in tapes:
        t._note_read(var, read)
    return read


def _has_tracer(values):
    return any(isinstance(v, jax.core.Tracer) for v in values)


def _add_node(tapes, fn, structure, treedef, template, positions, inputs, out):
    """Wraps `out`'s arrays in Tensors, appends the node, returns the Tensors' tree."""
    if isinstance(out, jax.Array):
        outputs = [Tensor(out)]
        result = outputs[0]
    else:
        leaves, out_tree = jax.tree_util.tree_flatten(out)
        outputs = [Tensor(o) if isinstance(o, jax.Array) else None for o in leaves]
        result = jax.tree_util.tree_unflatten(
            out_tree, [o if t is None else t for o, t in zip(leaves, outputs)])
    node = _Node(fn, structure, treedef, template, positions, inputs, outputs)
    for t in tapes:
        t._add(node)
    return result


# A recorded op runs eagerly. From its second use on, an op structure runs
# as one jitted call: that costs far less than JAX's primitive-by-primitive
# dispatch (a loss is a dozen primitives), and loopax ops are pure by
# contract. A family of structures that keeps meeting new Python numbers
# (one that changes every step) stays on plain dispatch rather than compile
# on every step.
_EAGER = BoundedCache()  # structure -> _SEEN_ONCE, _NOT_JITTED or the jitted op
_SEEN_ONCE, _NOT_JITTED = object(), object()
_EAGER_FAMILIES: "collections.Counter" = collections.Counter()
_EAGER_PER_FAMILY = 8


def _evaluate(fn, structure, treedef, template, positions, values):
    """`fn` on `values`; jitted per op structure once the structure is reused."""
    plain = functools.partial(_call, fn, treedef, template, positions)
    if _has_tracer(values):
        return plain(values)
    compiled = _EAGER.get(structure)
    if compiled is None:
        _EAGER.put(structure, _SEEN_ONCE)
        return plain(values)
    if compiled is _SEEN_ONCE:
        family = structure[:2] + tuple(k[0] if k[0] in (int, float) else k
                                       for k in structure[2])
        _EAGER_FAMILIES[family] += 1
        jittable = _EAGER_FAMILIES[family] <= _EAGER_PER_FAMILY
        compiled = _EAGER.put(structure, jax.jit(plain) if jittable else _NOT_JITTED)
    if compiled is _NOT_JITTED:
        return plain(values)
    try:
        return compiled(values)
    except TypeError:   # non-array outputs, or Python control flow on values
        out = plain(values)
        _EAGER.put(structure, _NOT_JITTED)
        return out


def record(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Runs the op `fn(*args, **kwargs)`, recording it on every tape that
    follows one of its inputs. Called by `loopax.src.tensor.op`."""
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs), is_leaf=_is_wrapped)
    tapes = _following(leaves)
    if not tapes:
        values = [x._loopax_value if isinstance(x, Tensor) else
                  x.value if isinstance(x, Variable) else x for x in leaves]
        a, k = jax.tree_util.tree_unflatten(treedef, values)
        with _suspended():
            return fn(*a, **k)
    template, positions = _split_leaves(leaves)
    inputs = []
    for p in positions:
        x = leaves[p]
        inputs.append(_read_value(x, x.value, tapes) if isinstance(x, Variable) else x)
    values = [x._loopax_value if isinstance(x, Tensor) else x for x in inputs]
    structure = (static_key(fn), treedef, _template_key(template))
    out = _evaluate(fn, structure, treedef, template, positions, values)
    return _add_node(tapes, fn, structure, treedef, template, positions, inputs, out)


class _UnmappedRead(RuntimeError):
    pass


class _TrackingScope(StateScope):
    """A StateScope that maps `mapping` and notes every other Variable read.

    With `strict=` (a description of the caller), reading an unmapped
    Variable is an error instead: a replay must not bake a value in.
    """

    def __init__(self, mapping, strict=None):
        super().__init__(mapping)
        self.unmapped = {}
        self.strict = strict

    def _lookup(self, var):
        hit = self._values.get(id(var))
        if hit is not None:
            return hit[1]
        if self.strict is not None:
            raise _UnmappedRead(
                f"{self.strict} read variable {var.path!r} that it did not read "
                "when it was first called under the GradientTape with these "
                "arguments. It must read the same variables each time.")
        self.unmapped.setdefault(id(var), var)
        return None



register_tape_recorder(record)   # loopax ops call `record` while a tape records
