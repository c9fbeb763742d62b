"""`GradientTape`: TensorFlow's imperative autodiff, on JAX.

While a tape records, every loopax op whose inputs it follows (a watched
Tensor, a watched or trainable Variable, or a Tensor an earlier recorded op
returned) runs eagerly and appends one node to the tape:

    node = (fn, static structure of the arguments, input Tensors, output Tensors)

A Variable input is *read*: its current value becomes a fresh Tensor that the
tape remembers as a read of that Variable. The outermost Layer call is one
node too (`record_layer_call`), so layer internals may be plain JAX.

`gradient(target, sources)` keeps the nodes the target depends on and turns
them into a replay function

    replay(source_values, constant_values) -> target_values

that re-runs the recorded fns. `jax.jit(jax.vjp(replay))` is compiled once
per recorded *program structure* (fns, static arguments, wiring) and cached,
so a training loop compiles its backward pass once. The gradient for a
Variable is the sum over its reads. If an outer tape records while an inner
tape computes a gradient, the compiled gradient function is itself recorded
on the outer tape as one op, which gives higher-order derivatives.

Speed: an op structure seen before runs as one jitted call, and a layer
called again with the same argument structure runs its compiled forward
(`_LayerPlan`), so the eager step costs a few dispatches, not one per
primitive.

Static (non-array) arguments are part of the structure: plain values by
value, other objects by identity. A Python number that changes every step
compiles a new program each step (pass an array instead), and an object
mutated after its first use (a loss's settings, a layer's Python attributes)
keeps its old behaviour in compiled code, as under `jax.jit`.

A `jax.numpy` function applied to a Tensor or Variable that a tape follows
raises a TypeError that names the fix (`loopax.ops.sin`, not `jnp.sin`):
JAX cannot report that computation to the tape, and an error beats a
silently missing gradient.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.state import StateScope, Variable, _state
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


def static_key(x):
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
_EAGER: "collections.OrderedDict" = collections.OrderedDict()  # structure -> state
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
        _EAGER[structure] = _SEEN_ONCE
        if len(_EAGER) > _CACHE_SIZE:
            _EAGER.popitem(last=False)
        return plain(values)
    if compiled is _SEEN_ONCE:
        family = structure[:2] + tuple(k[0] if k[0] in (int, float) else k
                                       for k in structure[2])
        _EAGER_FAMILIES[family] += 1
        jittable = _EAGER_FAMILIES[family] <= _EAGER_PER_FAMILY
        compiled = _EAGER[structure] = jax.jit(plain) if jittable else _NOT_JITTED
    if compiled is _NOT_JITTED:
        return plain(values)
    try:
        return compiled(values)
    except TypeError:   # non-array outputs, or Python control flow on values
        out = plain(values)
        _EAGER[structure] = _NOT_JITTED
        return out


def record(fn, args, kwargs):
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


# --------------------------------------------------------------------------
# Layer calls
# --------------------------------------------------------------------------

def _call_and_collect(layer, args, kwargs):
    """Calls `layer`; returns (outputs, add_loss losses, [(layer, count)])."""
    outputs = layer(*args, **kwargs)
    ctx = layer._last_outer_ctx
    losses, owners = [], []
    for sub in layer._layers_tree():
        if sub._loss_ctx == ctx and sub._losses:
            owners.append((sub, len(sub._losses)))
            losses.extend(sub._losses)
    return outputs, losses, owners


class _LayerPlan:
    """How a layer is called under a tape with one argument structure.

    Made after an eager first call, which builds sub-layers and shows which
    Variables the call reads (`variables`: the layer's own, then others).
    Later calls with concrete values run `forward` jitted (so Python side
    effects in `call()` run when it is traced), unless the layer is a Model
    with `run_eagerly` set, or the call cannot be traced (Python control flow
    on values). A compiled call that reads a Variable outside `variables` (a
    sub-layer built since) goes back to the eager path, which makes a new
    plan. `replay` is the pure function the tape records.
    """

    def __init__(self, layer, treedef, template, positions, variables):
        self.layer, self.variables = layer, variables
        self.treedef, self.template, self.positions = treedef, template, positions
        self.where = f"Layer {layer.name!r} ({type(layer).__name__})"
        self.structure = (("plan", id(self)),)
        self.eager = False   # set when the call cannot be compiled
        self.forward = jax.jit(self._forward)
        self.assigned, self.owners = [], []

    def _run(self, values, arrays):
        """Traces the call; leaves the layers' record of their last call as it was."""
        layers = self.layer._layers_tree()
        saved = [(l, l._losses, l._loss_ctx, l._last_outer_ctx) for l in layers]
        scope = _TrackingScope(zip(self.variables, values), strict=self.where)
        try:
            with _suspended(), scope:
                a, k = _fill(self.treedef, self.template, self.positions, arrays)
                outputs, losses, owners = _call_and_collect(self.layer, a, k)
        finally:
            for l, l_losses, loss_ctx, outer_ctx in saved:
                l._losses, l._loss_ctx, l._last_outer_ctx = l_losses, loss_ctx, outer_ctx
        return outputs, losses, owners, scope

    def replay(self, values, arrays):
        outputs, losses, _, _ = self._run(values, arrays)
        return outputs, losses

    def _forward(self, values, arrays):
        outputs, losses, self.owners, scope = self._run(values, arrays)
        self.assigned = scope.assigned_variables
        return outputs, losses, [scope.get_current_value(v) for v in self.assigned]

    def run_compiled(self, values, arrays):
        """(outputs, losses, owners), or None where it must run eagerly."""
        try:
            outputs, losses, new_values = self.forward(values, arrays)
        except _UnmappedRead:
            return None
        except TypeError:   # Python control flow on values: stay eager
            self.eager = True
            return None
        for v, value in zip(self.assigned, new_values):
            v.assign(value)
        from loopax.src.layers import layer as layer_lib
        layer_lib._ctx.counter += 1    # `layer.losses` now means this call's
        self.layer._last_outer_ctx = layer_lib._ctx.counter
        for owner, _ in self.owners:
            owner._loss_ctx = layer_lib._ctx.counter
        _set_losses(self.owners, losses)
        return outputs, losses, self.owners


_PLANS: "collections.OrderedDict" = collections.OrderedDict()


def _run_eagerly(layer, treedef, template, positions, arg_values, own):
    """Calls the layer op by op; returns (outputs, losses, owners, variables, values)."""
    values = [v.value for v in own]
    scope = _TrackingScope(zip(own, values))
    with _suspended(), scope:
        a, k = _fill(treedef, template, positions, arg_values)
        outputs, losses, owners = _call_and_collect(layer, a, k)
    # Eager ops on Variables return Tensors; the node's outputs are plain values.
    outputs, losses = jax.tree_util.tree_map(
        lambda x: x._loopax_value if isinstance(x, Tensor) else x, (outputs, losses),
        is_leaf=lambda x: isinstance(x, Tensor))
    # Variables read but not owned (sub-layers built during this call, shared ones).
    extras = list(scope.unmapped.values())
    values = values + [v.value for v in extras]
    for v in scope.assigned_variables:
        v.assign(scope.get_current_value(v))
    return outputs, losses, owners, own + extras, values


def record_layer_call(layer, args, kwargs):
    """Runs the outermost call of a built `layer` while tapes record.

    Variable assignments the call makes (BatchNorm statistics, seed states)
    are applied. If a tape follows an input or a Variable the call reads, the
    call becomes one node whose outputs, and the losses its layers added
    (`layer.losses`), are Tensors the tape follows.
    """
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs), is_leaf=_is_wrapped)
    template, positions = _split_leaves(leaves)
    arg_values = [leaves[p]._loopax_value if isinstance(leaves[p], Tensor) else
                  leaves[p].value if isinstance(leaves[p], Variable) else leaves[p]
                  for p in positions]
    plan_key = (id(layer), treedef, _template_key(template))
    plan = _PLANS.get(plan_key)
    result = None
    if plan is not None and not plan.eager and not getattr(layer, "run_eagerly", False):
        values = [v.value for v in plan.variables]
        if not _has_tracer(values) and not _has_tracer(arg_values):
            result = plan.run_compiled(values, arg_values)
    if result is None:
        outputs, losses, owners, variables, values = _run_eagerly(
            layer, treedef, template, positions, arg_values, layer.variables)
        if plan is None or [id(v) for v in variables] != [id(v) for v in plan.variables]:
            plan = _PLANS[plan_key] = _LayerPlan(layer, treedef, template, positions, variables)
            if len(_PLANS) > _CACHE_SIZE:
                _PLANS.popitem(last=False)
    else:
        outputs, losses, owners = result
    tapes = _following(leaves, plan.variables)
    if not tapes:
        return outputs
    reads = [_read_value(v, value, tapes) for v, value in zip(plan.variables, values)]
    inputs = [_read_value(leaves[p], val, tapes) if isinstance(leaves[p], Variable)
              else leaves[p] for p, val in zip(positions, arg_values)]
    node_leaves, node_tree = jax.tree_util.tree_flatten(((reads, inputs), {}),
                                                        is_leaf=_is_wrapped)
    node_template, node_positions = _split_leaves(node_leaves)
    recorded_outputs, recorded_losses = _add_node(
        tapes, plan.replay, plan.structure, node_tree, node_template, node_positions,
        node_leaves, (outputs, losses))
    _set_losses(owners, recorded_losses)
    return recorded_outputs


def _set_losses(owners, losses):
    """Gives each layer that called add_loss its share of `losses`."""
    i = 0
    for owner, count in owners:
        owner._losses = list(losses[i:i + count])
        i += count

# --------------------------------------------------------------------------
# Replay and the compiled gradient functions
# --------------------------------------------------------------------------

class _Program:
    """The pruned, slot-numbered program a gradient needs."""

    def __init__(self, steps, n_slots, sources, consts, const_slots, target_slots, key):
        self.steps = steps                # [(node, in_slots, out_slots)]
        self.n_slots = n_slots
        self.sources = sources            # Tensors in slots 0..len-1
        self.consts = consts              # Tensors or arrays, in const_slots
        self.const_slots = const_slots
        self.target_slots = target_slots
        self.key = key


def _make_replay(program):
    """replay(source_values, const_values) -> [target values]; keeps no arrays."""
    steps = [(node.fn, node.treedef, node.template, node.positions, ins, outs)
             for node, ins, outs in program.steps]
    n, n_src = program.n_slots, len(program.sources)
    const_slots, target_slots = program.const_slots, program.target_slots

    def replay(sources, consts):
        env = [None] * n
        env[:n_src] = sources
        for s, v in zip(const_slots, consts):
            env[s] = v
        for fn, treedef, template, positions, ins, outs in steps:
            a, k = _fill(treedef, template, positions, [env[s] for s in ins])
            out = fn(*a, **k)
            for s, o in zip(outs, jax.tree_util.tree_leaves(out)):
                if s is not None:
                    env[s] = o
        return [env[s] for s in target_slots]
    return replay


def _sum_groups(values, groups):
    return [functools.reduce(jnp.add, [values[i] for i in g]) for g in groups]


def _compile_gradient(program, groups):
    replay = _make_replay(program)

    def gradient(sources, consts, cotangents):
        outs, vjp = jax.vjp(lambda s: replay(s, consts), sources)
        cotangents = [jnp.ones_like(o) if c is None else jnp.asarray(c, o.dtype)
                      for o, c in zip(outs, cotangents)]
        (grads,) = vjp(cotangents)
        return _sum_groups(grads, groups)
    return jax.jit(gradient)


def _compile_jacobian(program, groups):
    replay = _make_replay(program)

    def jacobian(sources, consts, unused):
        jac = jax.jacrev(lambda s: replay(s, consts)[0])(sources)
        return _sum_groups(jac, groups)
    return jax.jit(jacobian)


def _compile_batch_jacobian(program, groups):
    replay = _make_replay(program)

    def batch_jacobian(sources, consts, unused):
        y, vjp = jax.vjp(lambda s: replay(s, consts)[0], sources)
        batch, rest = y.shape[0], y.shape[1:]
        size = int(np.prod(rest))
        # One cotangent per target feature, the same for every batch row.
        basis = jnp.eye(size, dtype=y.dtype).reshape((size, 1) + rest)
        cts = jnp.broadcast_to(basis, (size, batch) + rest)
        (grads,) = jax.vmap(vjp)(cts)
        out = []
        for g in _sum_groups(grads, groups):      # (size, batch, *source_rest)
            g = jnp.moveaxis(g, 0, 1)
            out.append(g.reshape((batch,) + rest + g.shape[2:]))
        return out
    return jax.jit(batch_jacobian)


_COMPILERS = {"gradient": _compile_gradient, "jacobian": _compile_jacobian,
              "batch_jacobian": _compile_batch_jacobian}
_CACHE: "collections.OrderedDict" = collections.OrderedDict()
_CACHE_SIZE = 256


def _compiled(mode, program, groups):
    """The jitted function for this program structure (cached)."""
    key = (mode, program.key, groups)
    fn = _CACHE.get(key)
    if fn is None:
        fn = _COMPILERS[mode](program, groups)
        _CACHE[key] = fn
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return fn


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
    def stop_recording(self):
        """Ops inside this block are not recorded by this tape."""
        if not self._recording:
            raise RuntimeError("stop_recording() needs a recording tape: use it "
                               "inside the tape's `with` block.")
        saved = _state.tapes
        _state.tapes = [t for t in saved if t is not self]
        try:
            yield
        finally:
            _state.tapes = saved

    def reset(self):
        """Forgets everything recorded and watched, as a new tape would."""
        self._clear()
        self._used = False

    def watch(self, tensor):
        """Follows `tensor`: a Tensor, a Variable, or a nested structure of them."""
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

    def watched_variables(self):
        """The Variables watched explicitly or by being read, in watch order."""
        return tuple(self._watched.values())

    # ---- differentiation ---------------------------------------------------
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients="none"):
        """d(sum of target) / d(sources), in the structure of `sources`.

        Args:
            target: a Tensor or a nested structure of Tensors; a non-scalar
                target is summed (weighted by `output_gradients` if given).
            sources: a Variable, a Tensor, or any nested structure of them.
            output_gradients: one cotangent per target Tensor (same shapes).
            unconnected_gradients: "none" (None for a source the target does
                not depend on) or "zero" (zeros of the source's shape).
        """
        self._check_usable("call gradient()")
        _check_target_given(target, "gradient")
        zero = _check_unconnected(unconnected_gradients)
        targets, _ = jax.tree_util.tree_flatten(target, is_leaf=_is_wrapped)
        cts = [None] * len(targets)
        if output_gradients is not None:
            cts = jax.tree_util.tree_flatten(
                output_gradients, is_leaf=lambda x: x is None or _is_wrapped(x))[0]
            if len(cts) != len(targets):
                raise ValueError(
                    f"gradient(): output_gradients has {len(cts)} entries but the "
                    f"target has {len(targets)} Tensors; pass one per target Tensor.")
        keep = [i for i, t in enumerate(targets) if self._connected_target(t)]
        for i in keep:
            _check_cotangent(targets[i], cts[i])
        return self._differentiate(
            "gradient", [targets[i] for i in keep], sources, zero,
            lambda t, s: s.shape, [cts[i] for i in keep], warn_target=target)

    def jacobian(self, target, sources, unconnected_gradients="none",
                 parallel_iterations=None, experimental_use_pfor=True):
        """d target / d source for each source: shape `target.shape + source.shape`."""
        self._check_usable("call jacobian()")
        _check_target_given(target, "jacobian")
        zero = _check_unconnected(unconnected_gradients)
        if not isinstance(target, (Tensor, Variable)) and not isinstance(target, _ARRAYS):
            raise TypeError("jacobian() takes a single target Tensor.")
        targets = [target] if self._connected_target(target) else []
        return self._differentiate(
            "jacobian", targets, sources, zero,
            lambda t, s: tuple(np.shape(t)) + s.shape, [], warn_target=target)

    def batch_jacobian(self, target, source, unconnected_gradients="none",
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example jacobian: target (B, *T), source (B, *S) -> (B, *T, *S).

        Assumes example i of the target depends only on example i of the
        source (as TensorFlow's does).
        """
        self._check_usable("call batch_jacobian()")
        zero = _check_unconnected(unconnected_gradients)
        t_shape, s_shape = tuple(np.shape(target)), tuple(np.shape(source))
        if not t_shape or not s_shape or t_shape[0] != s_shape[0]:
            raise ValueError(
                f"batch_jacobian(): target {t_shape} and source {s_shape} need the "
                "same leading (batch) dimension.")
        targets = [target] if self._connected_target(target) else []
        return self._differentiate(
            "batch_jacobian", targets, source, zero,
            lambda t, s: tuple(np.shape(t)) + s.shape[1:], [], warn_target=target)

    # ---- internals -------------------------------------------------------
    def _connected_target(self, t):
        if not isinstance(t, Tensor) or id(t) not in self._known:
            return False
        return _differentiable(t.dtype)

    def _source_group(self, s):
        """The Tensors a source stands for: a Variable's reads, or itself."""
        if isinstance(s, Variable):
            group = self._reads.get(id(s), [])
        elif isinstance(s, Tensor):
            group = [s] if id(s) in self._known else []
        else:
            raise TypeError(
                f"GradientTape sources must be Variables or Tensors (or nested "
                f"structures of them); got {type(s).__name__}. A plain array cannot "
                "be watched: wrap it with `loopax.constant(x)`, `tape.watch()` that "
                "Tensor, and compute with it.")
        return [t for t in group if _differentiable(t.dtype)]

    def _differentiate(self, mode, targets, sources, zero, unconnected_shape, extra,
                       warn_target):
        flat, tree = jax.tree_util.tree_flatten(sources, is_leaf=_is_wrapped)
        groups = [self._source_group(s) for s in flat]
        integer = [getattr(s, "path", None) or type(s).__name__ for s in flat
                   if not _differentiable(s.dtype)]
        if integer:  # TF's rule: None for them, with a warning
            warnings.warn(
                f"GradientTape.{mode}(): sources {integer} have an integer or boolean "
                "dtype, which has no gradient; their result is None. Create them with a "
                "float dtype (e.g. `loopax.Variable(x, dtype='float32')`) to differentiate "
                "with respect to them.", stacklevel=3)
        if not any(isinstance(t, Tensor) and id(t) in self._known
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
        return jax.tree_util.tree_unflatten(tree, results)

    def _call(self, fn, program, extra):
        """Runs the compiled function `fn(sources, consts, extra)`; an outer
        tape that follows its inputs records it as one op (higher order)."""
        with self._not_recording():
            if _state.tapes:
                return record(fn, (program.sources, program.consts, extra), {})
            srcs = [t._loopax_value for t in program.sources]
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

    def _program(self, targets, groups):
        """Prunes the tape to what `targets` need and numbers the values."""
        source_ids = {}
        for g in groups:
            for t in g:
                source_ids.setdefault(id(t), t)
        needed = {id(t) for t in targets}
        nodes = []
        for node in reversed(self._nodes):
            if any(o is not None and id(o) in needed and id(o) not in source_ids
                   for o in node.outputs):
                nodes.append(node)
                needed.update(id(x) for x in node.inputs)
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
                if o is None or id(o) in source_ids:
                    outs.append(None)
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


def _check_target_given(target, method):
    """TensorFlow's TypeError for `tape.gradient(None, ...)` (a loss that was never
    computed, e.g. a function that forgot to `return` it)."""
    if target is None:
        raise TypeError(
            f"{method}(): argument `target` should be a Tensor, a Variable or a nested "
            "structure of them to be differentiated, but received None. Pass the value "
            "computed under the tape (did the loss function forget to `return`?).")


def _check_unconnected(value):
    if value in ("none", None):
        return False
    if value == "zero":
        return True
    raise ValueError(
        f"unconnected_gradients must be 'none' or 'zero', got {value!r}.")


def _check_cotangent(target, ct):
    if ct is None:
        return
    shape = tuple(np.shape(ct))
    if shape != target.shape:
        raise ValueError(
            f"gradient(): an output_gradients entry has shape {shape} but its "
            f"target has shape {target.shape}; they must match.")


register_tape_recorder(record)   # loopax ops call `record` while a tape records
