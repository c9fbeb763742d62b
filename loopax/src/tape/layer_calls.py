"""Layer calls on a tape: the outermost layer or model call is one node.

The first call with an argument structure runs eagerly (it builds sub-layers
and shows which Variables the call reads); later calls run a compiled
forward (`_LayerPlan`), and the node the tape records replays the call as a
pure function of the Variables' values and the arguments.
"""

from __future__ import annotations

from typing import Any

import jax

from loopax.src.state import Variable
from loopax.src.tape.bounded_cache import BoundedCache
from loopax.src.tape.recording import (
    _add_node,
    _fill,
    _following,
    _has_tracer,
    _is_wrapped,
    _read_value,
    _split_leaves,
    _suspended,
    _template_key,
    _TrackingScope,
    _UnmappedRead,
)
from loopax.src.tensor import Tensor

# --------------------------------------------------------------------------
# Layer calls
# --------------------------------------------------------------------------

def _call_and_collect(layer, args, kwargs, scope):
    """Calls `layer` inside `scope`; returns (outputs, the add_loss values, the
    layer that added each): taken from the scope, so they leave as outputs."""
    outputs = layer(*args, **kwargs)
    added = scope.take_losses()
    return outputs, [value for _, value in added], [owner for owner, _ in added]


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
        """Traces the call (its losses stay in its own scope, taken out as outputs)."""
        scope = _TrackingScope(zip(self.variables, values), strict=self.where)
        with _suspended(), scope:
            a, k = _fill(self.treedef, self.template, self.positions, arrays)
            outputs, losses, owners = _call_and_collect(self.layer, a, k, scope)
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
        return outputs, losses, self.owners


_PLANS = BoundedCache()   # (id(layer), argument structure) -> _LayerPlan


def _run_eagerly(layer, treedef, template, positions, arg_values, own):
    """Calls the layer op by op; returns (outputs, losses, owners, variables, values)."""
    values = [v.value for v in own]
    scope = _TrackingScope(zip(own, values))
    with _suspended(), scope:
        a, k = _fill(treedef, template, positions, arg_values)
        outputs, losses, owners = _call_and_collect(layer, a, k, scope)
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


def record_layer_call(layer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
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
            plan = _PLANS.put(plan_key, _LayerPlan(layer, treedef, template, positions,
                                                   variables))
    else:
        outputs, losses, owners = result
    layer._keep_losses(zip(owners, losses))   # `layer.losses`: this call's
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
    layer._keep_losses(zip(owners, recorded_losses))   # as Tensors the tapes follow
    return recorded_outputs


