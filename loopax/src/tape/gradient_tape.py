"""`GradientTape`: records ops, then differentiates the recorded program."""

from __future__ import annotations

import contextlib
import enum
import functools
import warnings
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.state import Variable, _state
from loopax.src.tape.program import _compiled, _Program
from loopax.src.tape.recording import _ARRAYS, _WRAPPED, _is_wrapped, record
from loopax.src.tensor import Tensor, as_tensors


class UnconnectedGradients(str, enum.Enum):
    """What `gradient()` returns for a source the target does not depend on
    (TensorFlow's `tf.UnconnectedGradients`): `NONE` (None) or `ZERO` (zeros of
    the source's shape). Its values equal the strings `"none"` and `"zero"`."""

    NONE = "none"
    ZERO = "zero"


# --------------------------------------------------------------------------
# GradientTape
# --------------------------------------------------------------------------

class GradientTape:
    """Records operations for automatic differentiation, as `tf.GradientTape`.

    ```python
    x = loopax.constant(3.0)
    with loopax.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)        # 6.0
    ```

    Args:
        persistent: allow more than one `gradient()` / `jacobian()` call.
        watch_accessed_variables: watch every trainable Variable an op reads
            while recording (otherwise only what `watch()` was given).

    What is recorded: loopax ops, Python operators on Tensors and Variables
    (with NumPy arrays, JAX arrays or scalars on either side), layer and
    model calls, `loopax.custom_gradient` functions and inner tapes'
    gradients. Not recorded: `jax.numpy` functions (they raise a TypeError on
    a followed value; use `loopax.ops`), `variable.value` (a raw array), and
    anything after the `with` block.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._recording = False
        self._used = False
        self._clear()

    def _clear(self):
        self._nodes = []
        self._known = {}          # id -> Tensor: watched, read or produced
        self._reads = {}          # id(variable) -> [read Tensors]
        self._watched = {}        # id(variable) -> variable, in watch order

    # ---- the hooks the core calls ----------------------------------------
    def _follows(self, x):
        if self._used:
            return False
        if isinstance(x, Tensor):
            return id(x) in self._known
        if isinstance(x, Variable):
            return id(x) in self._watched or (self._watch_accessed and x.trainable)
        return False

    def _note_read(self, var, read):
        if id(var) not in self._watched:
            if not (self._watch_accessed and var.trainable):
                return
            self._watched[id(var)] = var
        self._reads.setdefault(id(var), []).append(read)
        self._known[id(read)] = read

    def _add(self, node):
        self._nodes.append(node)
        for o in node.outputs:
            if o is not None:
                self._known[id(o)] = o

    # ---- context ---------------------------------------------------------
    def __enter__(self):
        if self._recording:
            raise RuntimeError("This GradientTape is already recording; it cannot "
                               "be entered twice at the same time.")
        self._check_usable("record")
        self._recording = True
        _state.tapes = _state.tapes + [self]
        return self

    def __exit__(self, *exc):
        self._recording = False
        _state.tapes = [t for t in _state.tapes if t is not self]
        return False

    def _check_usable(self, what):
        if self._used:
            raise RuntimeError(
                f"Cannot {what}: a non-persistent GradientTape can only be used to "
                "compute one set of gradients (or jacobians). Create it with "
                "`GradientTape(persistent=True)` to call gradient() more than once.")

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Ops inside this block are not recorded by this tape.

        Yields:
            Nothing; ops run inside the `with` block are not recorded.

        Raises:
            RuntimeError: the tape is not recording (outside its `with` block).
        """
        if not self._recording:
            raise RuntimeError("stop_recording() needs a recording tape: use it "
                               "inside the tape's `with` block.")
        saved = _state.tapes
        _state.tapes = [t for t in saved if t is not self]
        try:
            yield
        finally:
            _state.tapes = saved

    def reset(self) -> None:
        """Forgets everything recorded and watched, as a new tape would."""
        self._clear()
        self._used = False

    def watch(self, tensor: Any) -> None:
        """Follows `tensor`: a Tensor, a Variable, or a nested structure of them.

        Args:
            tensor: A Tensor (`loopax.constant(x)`), a Variable, or a nested structure of them.
                A plain array cannot be followed.

        Raises:
            RuntimeError: called outside the tape's `with` block.
            TypeError: a leaf of `tensor` is not a Tensor or Variable.
        """
        if not self._recording:
            raise RuntimeError(
                "GradientTape.watch() was called outside the tape's `with` block, "
                "where nothing is recorded. Call watch() and compute the target "
                "inside `with tape:`.")
        for x in jax.tree_util.tree_leaves(tensor, is_leaf=_is_wrapped):
            if isinstance(x, Variable):
                self._watched.setdefault(id(x), x)
            elif isinstance(x, Tensor):
                self._known[id(x)] = x
            else:
                raise TypeError(
                    f"GradientTape.watch() takes Tensors and Variables; got "
                    f"{type(x).__name__}. Wrap arrays with `loopax.constant(x)` "
                    "first and use that Tensor in the computation.")

    def watched_variables(self) -> tuple[Any, ...]:
        """The Variables watched explicitly or by being read, in watch order.

        Returns:
            A tuple of Variables.
        """
        return tuple(self._watched.values())

    # ---- differentiation ---------------------------------------------------
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: Any = "none") -> Any:
        """d(sum of target) / d(sources), in the structure of `sources`.

        As in TensorFlow, a gradient flows along recorded float values: a source
        the target reaches only through `stop_gradient` or integer values (a
        cast, `argmax`) is unconnected, and a target that is itself a source
        (`gradient(v, v)`) contributes ones, recorded or not.

        Args:
            target: a Tensor or a nested structure of Tensors; a non-scalar
                target is summed (weighted by `output_gradients` if given).
            sources: a Variable, a Tensor, or any nested structure of them.
            output_gradients: one cotangent per target Tensor (same shapes).
            unconnected_gradients: "none" (None for a source the target does
                not depend on) or "zero" (zeros of the source's shape), or
                `loopax.UnconnectedGradients.NONE` / `.ZERO`.

        Returns:
            Gradients in the structure of `sources`, each with its source's shape (None for an
            unconnected source unless `unconnected_gradients="zero"`).

        Raises:
            RuntimeError: a non-persistent tape already computed gradients.
            TypeError: `target` is None, or a source is not a Variable or Tensor.
            ValueError: `output_gradients` does not match the target's structure or shapes,
                or `unconnected_gradients` is not `"none"`/`"zero"`.
        """
        self._check_usable("call gradient()")
        _check_target_given(target, "gradient")
        zero = _check_unconnected(unconnected_gradients)
        targets, _ = jax.tree_util.tree_flatten(target, is_leaf=_is_wrapped)
        targets, itself = _targets_that_are_sources(targets, sources)
        cts = [None] * len(targets)
        if output_gradients is not None:
            cts = jax.tree_util.tree_flatten(
                output_gradients, is_leaf=lambda x: x is None or _is_wrapped(x))[0]
            if len(cts) != len(targets):
                raise ValueError(
                    f"gradient(): output_gradients has {len(cts)} entries but the "
                    f"target has {len(targets)} Tensors; pass one per target Tensor.")
        keep = [i for i, t in enumerate(targets) if self._connected_target(t, itself)]
        for i in keep:
            _check_cotangent(targets[i], cts[i])
        return self._differentiate(
            "gradient", [targets[i] for i in keep], sources, zero,
            lambda t, s: s.shape, [cts[i] for i in keep], warn_target=target, itself=itself)

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: Any = "none",
                 parallel_iterations: int | None = None,
                 experimental_use_pfor: bool = True) -> Any:
        """d target / d source for each source: shape `target.shape + source.shape`.

        Args:
            target: One Tensor of shape `T`.
            sources: A Variable, a Tensor, or a nested structure of them.
            unconnected_gradients: `"none"` (None for an unconnected source) or `"zero"`.
            parallel_iterations: Accepted for TensorFlow compatibility; unused.
            experimental_use_pfor: Accepted for TensorFlow compatibility; unused.

        Returns:
            Jacobians in the structure of `sources`, each of shape `T + source.shape`.

        Raises:
            RuntimeError: a non-persistent tape was used already.
            TypeError: `target` is None or not a single Tensor.
        """
        self._check_usable("call jacobian()")
        _check_target_given(target, "jacobian")
        zero = _check_unconnected(unconnected_gradients)
        if not isinstance(target, (Tensor, Variable)) and not isinstance(target, _ARRAYS):
            raise TypeError("jacobian() takes a single target Tensor.")
        (target,), itself = _targets_that_are_sources([target], sources)
        targets = [target] if self._connected_target(target, itself) else []
        return self._differentiate(
            "jacobian", targets, sources, zero,
            lambda t, s: tuple(np.shape(t)) + s.shape, [], warn_target=target, itself=itself)

    def batch_jacobian(self, target: Any, source: Any, unconnected_gradients: Any = "none",
                       parallel_iterations: int | None = None,
                       experimental_use_pfor: bool = True) -> Any:
        """Per-example jacobian: target (B, *T), source (B, *S) -> (B, *T, *S).

        Assumes example i of the target depends only on example i of the
        source (as TensorFlow's does).

        Args:
            target: A Tensor of shape `(B, *T)`.
            source: A Tensor or Variable of shape `(B, *S)`.
            unconnected_gradients: `"none"` (None when unconnected) or `"zero"`.
            parallel_iterations: Accepted for TensorFlow compatibility; unused.
            experimental_use_pfor: Accepted for TensorFlow compatibility; unused.

        Returns:
            An array of shape `(B, *T, *S)`.

        Raises:
            RuntimeError: a non-persistent tape was used already.
            ValueError: `target` and `source` do not share a leading batch dimension.
        """
        self._check_usable("call batch_jacobian()")
        zero = _check_unconnected(unconnected_gradients)
        t_shape, s_shape = tuple(np.shape(target)), tuple(np.shape(source))
        if not t_shape or not s_shape or t_shape[0] != s_shape[0]:
            raise ValueError(
                f"batch_jacobian(): target {t_shape} and source {s_shape} need the "
                "same leading (batch) dimension.")
        (target,), itself = _targets_that_are_sources([target], source)
        targets = [target] if self._connected_target(target, itself) else []
        return self._differentiate(
            "batch_jacobian", targets, source, zero,
            lambda t, s: tuple(np.shape(t)) + s.shape[1:], [], warn_target=target,
            itself=itself)

    # ---- internals -------------------------------------------------------
    def _connected_target(self, t, itself):
        if not isinstance(t, Tensor) or not (
                id(t) in self._known or any(t is r for g in itself.values() for r in g)):
            return False
        return _differentiable(t.dtype)

    def _source_group(self, s, itself):
        """The Tensors a source stands for: a Variable's reads, or itself; and,
        where the source is also a target, that target (`itself`)."""
        if isinstance(s, Variable):
            group = self._reads.get(id(s), []) + itself.get(id(s), [])
        elif isinstance(s, Tensor):
            group = [s] if id(s) in self._known or id(s) in itself else []
        else:
            raise TypeError(
                f"GradientTape sources must be Variables or Tensors (or nested "
                f"structures of them); got {type(s).__name__}. A plain array cannot "
                "be watched: wrap it with `loopax.constant(x)`, `tape.watch()` that "
                "Tensor, and compute with it.")
        return [t for t in group if _differentiable(t.dtype)]

    def _differentiate(self, mode, targets, sources, zero, unconnected_shape, extra,
                       warn_target, itself):
        flat, tree = jax.tree_util.tree_flatten(sources, is_leaf=_is_wrapped)
        groups = [self._source_group(s, itself) for s in flat]
        integer = [getattr(s, "path", None) or type(s).__name__ for s in flat
                   if not _differentiable(s.dtype)]
        if integer:  # TF's rule: None for them, with a warning
            warnings.warn(
                f"GradientTape.{mode}(): sources {integer} have an integer or boolean "
                "dtype, which has no gradient; their result is None. Create them with a "
                "float dtype (e.g. `loopax.Variable(x, dtype='float32')`) to differentiate "
                "with respect to them.", stacklevel=3)
        if not itself and not any(
                isinstance(t, Tensor) and id(t) in self._known
                for t in jax.tree_util.tree_leaves(warn_target, is_leaf=_is_wrapped)):
            warnings.warn(
                f"GradientTape.{mode}(): the target is not a value this tape "
                "recorded, so every result is None. Compute it inside `with tape:` "
                "from watched Tensors or trainable Variables with loopax ops (not "
                "jax.numpy) and Python operators.", stacklevel=3)
        program = self._program(targets, groups) if targets else None
        results = [None] * len(flat)
        if program is not None:
            src_index = {id(t): i for i, t in enumerate(program.sources)}
            index_groups = [tuple(src_index[id(t)] for t in g if id(t) in src_index)
                            for g in groups]
            connected = [i for i, g in enumerate(index_groups) if g]
            if connected:
                fn = _compiled(mode, program, tuple(index_groups[i] for i in connected))
                values = self._call(fn, program, extra)
                for i, v in zip(connected, values):
                    results[i] = v
        if zero:
            t0 = targets[0] if targets else warn_target
            results = [jnp.zeros(unconnected_shape(t0, s), s.dtype) if r is None else r
                       for r, s in zip(results, flat)]
        if not self._persistent:
            self._used = True
            watched = self._watched
            self._clear()
            self._watched = watched   # watched_variables() still answers
        results = jax.tree_util.tree_unflatten(tree, results)
        # Eager results are Tensors (`.numpy()`, watchable), as TensorFlow's; inside a
        # state scope (fit's step, a stateless call) they stay arrays (or tracers).
        return results if _state.scopes else as_tensors(results)

    def _call(self, fn, program, extra):
        """Runs the compiled function `fn(sources, consts, extra)`; an outer
        tape that follows its inputs records it as one op (higher order)."""
        with self._not_recording():
            sources = [jnp.zeros_like(t._loopax_value) if i in program.computed_sources else t
                       for i, t in enumerate(program.sources)]
            if _state.tapes:
                return record(fn, (sources, program.consts, extra), {})
            srcs = [t._loopax_value if isinstance(t, Tensor) else t for t in sources]
            consts = [c._loopax_value if isinstance(c, Tensor) else c
                      for c in program.consts]
            extra = [e._loopax_value if isinstance(e, Tensor) else
                     e.value if isinstance(e, Variable) else e for e in extra]
            return fn(srcs, consts, extra)

    @contextlib.contextmanager
    def _not_recording(self):
        saved = _state.tapes
        if self in saved:
            _state.tapes = [t for t in saved if t is not self]
        try:
            yield
        finally:
            _state.tapes = saved

    def _downstream_of(self, source_ids):
        """The ids of the values a gradient can reach from the sources: float
        values that recorded ops with a gradient computed from them."""
        live = set(source_ids)
        for node in self._nodes:
            if any(id(x) in live for x in node.inputs) and not _blocks_gradient(node.fn):
                for o in node.outputs:
                    if o is not None and _differentiable(o.dtype):
                        live.add(id(o))
        return live

    def _program(self, targets, groups):
        """Prunes the tape to what `targets` need and numbers the values.

        A gradient flows only along float (or complex) values and through ops
        that have one: an integer value, or the output of `stop_gradient`, is a
        constant of the program, so a source reached only that way is
        unconnected (None), as in TensorFlow. A source computed from another
        source passes the gradient on to it (`gradient(y, [h, w])` with
        `h = f(w)`): the replay computes it and adds the source's slot, zeros.
        """
        source_ids = {}
        for g in groups:
            for t in g:
                source_ids.setdefault(id(t), t)
        live = self._downstream_of(source_ids)
        needed = {id(t) for t in targets}
        nodes = []
        for node in reversed(self._nodes):
            if any(o is not None and id(o) in needed and id(o) in live
                   for o in node.outputs) and any(id(x) in live for x in node.inputs):
                nodes.append(node)
                needed.update(id(x) for x in node.inputs if id(x) in live)
        nodes.reverse()
        sources = [t for i, t in source_ids.items() if i in needed]
        slot = {id(t): i for i, t in enumerate(sources)}
        n = len(sources)
        consts, const_slots, steps, key = [], [], [], []
        for node in nodes:
            ins = []
            for x in node.inputs:
                s = slot.get(id(x))
                if s is None:
                    s = slot[id(x)] = n
                    n += 1
                    consts.append(x)
                    const_slots.append(s)
                ins.append(s)
            outs = []
            for o in node.outputs:
                if o is None:
                    outs.append(None)
                elif id(o) in source_ids:   # an intermediate source: added to its slot
                    outs.append(-1 - slot[id(o)] if id(o) in slot else None)
                else:
                    outs.append(n)
                    slot[id(o)] = n
                    n += 1
            ins, outs = tuple(ins), tuple(outs)
            steps.append((node, ins, outs))
            key.append(node.structure + (ins, outs))
        target_slots = []
        for t in targets:
            s = slot.get(id(t))
            if s is None:
                s = slot[id(t)] = n
                n += 1
                consts.append(t)
                const_slots.append(s)
            target_slots.append(s)
        key = (tuple(key), n, len(sources), tuple(const_slots), tuple(target_slots))
        return _Program(steps, n, sources, consts, tuple(const_slots),
                        tuple(target_slots), key)

    def __repr__(self):
        state = "recording" if self._recording else "not recording"
        return (f"<GradientTape {state}, {len(self._nodes)} ops, "
                f"persistent={self._persistent}>")


@functools.lru_cache(maxsize=None)
def _differentiable(dtype):
    """Float and complex values have gradients; integers and booleans do not."""
    return bool(jnp.issubdtype(dtype, jnp.inexact))


def _blocks_gradient(fn):
    """Whether the recorded op `fn` has no gradient (`loopax.ops.stop_gradient`)."""
    return getattr(fn, "__loopax_no_gradient__", False)


def _check_target_given(target, method):
    """TensorFlow's TypeError for `tape.gradient(None, ...)` (a loss that was never
    computed, e.g. a function that forgot to `return` it)."""
    if target is None:
        raise TypeError(
            f"{method}(): argument `target` should be a Tensor, a Variable or a nested "
            "structure of them to be differentiated, but received None. Pass the value "
            "computed under the tape (did the loss function forget to `return`?).")


def _targets_that_are_sources(targets, sources):
    """TensorFlow's rule for a target that is itself one of the sources
    (`tape.gradient(v, v)`): its gradient is ones, watched or not.

    Returns the targets with each such Variable replaced by a read of its value
    now, and `{id(source): [that read, or the Tensor itself]}`: `gradient`
    differentiates the read as it does any read of the Variable."""
    source_ids = {id(s) for s in jax.tree_util.tree_leaves(sources, is_leaf=_is_wrapped)}
    itself, out = {}, []
    for t in targets:
        if isinstance(t, _WRAPPED) and id(t) in source_ids:
            read = Tensor(t.value) if isinstance(t, Variable) else t
            itself.setdefault(id(t), []).append(read)
            t = read
        out.append(t)
    return out, itself


def _check_unconnected(value):
    if value in ("none", None):   # UnconnectedGradients members equal their strings
        return False
    if value == "zero":
        return True
    raise ValueError(
        f"unconnected_gradients must be 'none' or 'zero' (or loopax.UnconnectedGradients."
        f"NONE / ZERO), got {value!r}.")


def _check_cotangent(target, ct):
    if ct is None:
        return
    shape = tuple(np.shape(ct))
    if shape != target.shape:
        raise ValueError(
            f"gradient(): an output_gradients entry has shape {shape} but its "
            f"target has shape {target.shape}; they must match.")

