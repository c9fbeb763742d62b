"""Ops on symbolic tensors: `ops.concatenate([a, b])` in a functional model.

Keras lets functional code call ops on `Input`s as if they were layers. An
op called with a `SymbolicTensor` among its arguments becomes an `OpLayer`:
a weightless layer that holds the op and its static arguments and takes the
symbolic tensors as its input, so the functional graph records (and later
replays) it like any layer call.
"""

from __future__ import annotations

import jax

from loopax.src.layers.layer import Layer
from loopax.src.layers.symbolic import any_symbolic, is_symbolic
from loopax.src.state import unique_name
from loopax.src.tensor import register_symbolic_fallback


class OpLayer(Layer):
    """`fn(*args, **kwargs)` with the symbolic leaves of the arguments as inputs."""

    def __init__(self, fn, treedef, template, positions, name=None):
        super().__init__(name=name)
        self.fn = fn
        self._treedef, self._template, self._positions = treedef, template, positions

    def call(self, inputs):
        leaves = list(self._template)
        for position, value in zip(self._positions, inputs):
            leaves[position] = value
        args, kwargs = jax.tree_util.tree_unflatten(self._treedef, leaves)
        return self.fn(*args, **kwargs)

    def get_config(self):
        raise NotImplementedError(
            f"Layer {self.name!r} stands for the op {self.fn.__name__!r} called on symbolic "
            "tensors and cannot be serialized to a config; save the weights instead, or "
            "wrap the computation in a custom Layer with get_config().")


def call_on_symbolic(fn, args, kwargs):
    """Records `fn(*args, **kwargs)` as an `OpLayer` call in the functional graph
    (NotImplemented when no argument is symbolic)."""
    if not any_symbolic((args, kwargs)):
        return NotImplemented
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs), is_leaf=is_symbolic)
    positions = tuple(i for i, leaf in enumerate(leaves) if is_symbolic(leaf))
    template = tuple(None if i in positions else leaf for i, leaf in enumerate(leaves))
    name = getattr(fn, "__name__", "op").lstrip("_")
    layer = OpLayer(fn, treedef, template, positions, name=unique_name(name))
    return layer([leaves[i] for i in positions])


register_symbolic_fallback(call_on_symbolic)   # loopax ops fall back to it (tensor.op)
