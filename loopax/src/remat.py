"""Rematerialization (gradient checkpointing), as Keras's `keras.remat` and
`keras.RematScope` on JAX: intermediate values are recomputed in the backward
pass instead of kept, trading compute for memory. Values and gradients are
unchanged.

- `remat(f)` wraps one function (`jax.checkpoint`).
- `RematScope(mode=...)` picks layers: a layer created inside the scope takes
  the scope's mode, and each later (non-symbolic) call of that layer runs
  its `call` through `remat` when the mode selects it (`layer_call`, the
  hook in `Layer.__call__`). The mode is not saved with the model.
"""

import collections
import functools
import math
import threading
import warnings

import jax
import numpy as np

from loopax.src import state as _state_model

_MODES = ("full", "activations", "larger_than", "list_of_layers", None)

RematMode = collections.namedtuple(
    "RematMode", ["mode", "output_size_threshold", "layer_names"])


def remat(f):
    """Wraps `f` so that its intermediates are recomputed for the gradient
    (`jax.checkpoint`).

    Args:
        f: A function of arrays (or a layer's method), e.g. the costly part of a
            layer's `call`.

    Returns:
        A function with `f`'s signature and results.
    """
    if not callable(f):
        raise TypeError(f"remat: expected a function or layer, got {type(f).__name__}.")
    return functools.wraps(f)(jax.checkpoint(f))


class _Scopes(threading.local):
    def __init__(self):
        self.stack: list = []


_scopes = _Scopes()


class RematScope:
    """Rematerializes the layers created inside it (nestable; the innermost wins).

    Args:
        mode: `"full"` (every layer), `"activations"` (only the `activation`
            of layers that have one), `"larger_than"` (layers whose output has
            more than `output_size_threshold` elements, counted on the call's
            inputs), `"list_of_layers"` (layers named in `layer_names`), or
            None (none: turns an enclosing scope off).
        output_size_threshold: Element count for `"larger_than"`.
        layer_names: Layer names for `"list_of_layers"`.

    Example:

    ```python
    with loopax.RematScope(mode="list_of_layers", layer_names=["big"]):
        big = loopax.layers.Dense(4096, activation="relu", name="big")
    y = big(x)   # its call is wrapped in jax.checkpoint
    ```
    """

    def __init__(self, mode="full", output_size_threshold=1024, layer_names=None):
        if mode not in _MODES:
            raise ValueError(
                f"RematScope: invalid mode={mode!r}; expected one of 'full', "
                f"'activations', 'larger_than', 'list_of_layers' or None.")
        if isinstance(layer_names, str):
            warnings.warn(
                f"RematScope: layer_names={layer_names!r} is a string, so (as in Keras) "
                "every layer whose name is part of it is picked; pass a list of names, "
                f"e.g. layer_names=[{layer_names!r}].", stacklevel=2)
        self.mode = mode
        self.output_size_threshold = output_size_threshold
        self.layer_names = layer_names if isinstance(layer_names, str) else \
            list(layer_names or [])

    def __enter__(self):
        _scopes.stack.append(self)
        return self

    def __exit__(self, *exc):
        _scopes.stack.remove(self)
        return False


def current_remat_mode():
    """The innermost active `RematScope`'s settings as a `RematMode`, or None."""
    if not _scopes.stack:
        return None
    scope = _scopes.stack[-1]
    return RematMode(scope.mode, scope.output_size_threshold, scope.layer_names)


# ---- the layer hook ----------------------------------------------------------

def layer_call(layer, args, kwargs):
    """The function `Layer.__call__` runs instead of `layer.call` for a layer
    created in a `RematScope` (Keras's selection rules, per mode).

    Args:
        layer: The Layer; `layer._remat_mode` is its `RematMode`.
        args, kwargs: The call's arguments (to size the output for `"larger_than"`).

    Returns:
        A callable taking `(*args, **kwargs)`.
    """
    mode = layer._remat_mode
    if mode.mode == "activations":
        if getattr(layer, "activation", None) is None:
            return layer.call
        return functools.partial(_call_with_remat_activation, layer)
    if mode.mode == "full" or (
            mode.mode == "list_of_layers" and layer.name in mode.layer_names) or (
            mode.mode == "larger_than" and _is_larger(layer, args, kwargs, mode)):
        return _checkpointed_call(layer)
    return layer.call


def _call_with_remat_activation(layer, *args, **kwargs):
    activation = layer.activation
    layer.activation = remat(activation)
    try:
        return layer.call(*args, **kwargs)
    finally:
        layer.activation = activation


def _is_dynamic(leaf):
    return isinstance(leaf, (jax.Array, np.ndarray, np.generic))


def _pure_call(layer, variables, args, kwargs):
    """`layer.call` as `pure_call(values, arrays) -> (outputs, assigned values,
    added losses)`: `values` are the Variables', `arrays` the array leaves of
    `(args, kwargs)`; the other leaves (`training`, flags) stay Python values.
    Returns it with `arrays` and the lists it fills while traced (the Variables
    assigned, the layers that added the losses)."""
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    arrays = [leaf for leaf in leaves if _is_dynamic(leaf)]
    assigned, owners = [], []

    def pure_call(values, arrays):
        it = iter(arrays)
        a, k = jax.tree_util.tree_unflatten(
            treedef, [next(it) if _is_dynamic(leaf) else leaf for leaf in leaves])
        with _state_model.StateScope(zip(variables, values)) as scope:
            out = layer.call(*a, **k)
            added = scope.take_losses()   # out of the checkpoint as its outputs
        assigned[:] = scope.assigned_variables
        owners[:] = [owner for owner, _ in added]
        return out, [scope.get_current_value(v) for v in assigned], [v for _, v in added]

    return pure_call, arrays, assigned, owners


def _values_of(variables):
    with _state_model.autocast_scope(None):
        return [v.value for v in variables]


def _is_larger(layer, args, kwargs, mode):
    """Whether the call's outputs have more than `output_size_threshold`
    elements (shapes only: the call is traced; nothing is assigned, no loss kept)."""
    variables = layer.variables
    pure_call, arrays, _, _ = _pure_call(layer, variables, args, kwargs)
    out, _, _ = jax.eval_shape(pure_call, _values_of(variables), arrays)
    size = sum(math.prod(leaf.shape) for leaf in jax.tree_util.tree_leaves(out))
    return bool(size) and size > mode.output_size_threshold


def _checkpointed_call(layer):
    """`layer.call` through `remat`, as a pure function of the layer's Variables
    (`state.pure`'s pattern): their values go in, the ones `call` assigns come
    out and are assigned outside, and so do losses `call` adds, so no value
    traced inside the checkpoint leaks out."""
    variables = layer.variables

    def run(*args, **kwargs):
        pure_call, arrays, assigned, owners = _pure_call(layer, variables, args, kwargs)
        out, new_values, new_losses = remat(pure_call)(_values_of(variables), arrays)
        for var, value in zip(assigned, new_values):
            var.assign(value)
        for owner, value in zip(owners, new_losses):   # values from outside the checkpoint
            owner._collect_loss(value)
        return out

    return run
