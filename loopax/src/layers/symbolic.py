"""Symbolic tensors and graph nodes: what the functional API is built from.

`loopax.Input(shape=(784,))` returns a `SymbolicTensor`: a shape and dtype
with no value, remembering which layer call produced it. Calling a layer on
symbolic tensors records a `Node` and returns new symbolic tensors; a
functional `Model(inputs, outputs)` replays those nodes.
"""

from __future__ import annotations

import jax
import numpy as np

from loopax.src import dtypes
from loopax.src.state import Variable
from loopax.src.tensor import Tensor


class SymbolicTensor:
    """A placeholder with a shape (None for unknown sizes) and a dtype.

    Python operators on it (`a * b`, `x @ w`, `x[:, 0]`, `-x`, `x > 0`, ...) are
    recorded as ops of the functional graph, as on Keras's KerasTensor (they are
    installed by `loopax.src.layers.op_layer`). `==` compares identity.

    Args:
        shape: The shape, None for an unknown size.
        dtype: The dtype (default `floatx()`).
        name: An optional name.
        node: The graph node that produced it (None for an `Input`).
        index: Which of the node's outputs it is.
        sparse: Accepted for Keras compatibility.
    """

    # NumPy arrays on the left of an operator defer to our reflected methods.
    __array_priority__ = 1000
    __array_ufunc__ = None

    def __init__(self, shape, dtype=None, name=None, node=None, index=0, sparse=False):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = dtypes.standardize(dtype)
        self.name = name
        self.node = node      # the Node that produced it (None for Inputs)
        self.index = index    # which of the node's outputs it is

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"<SymbolicTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def __iter__(self):
        raise TypeError(
            f"Iterating over a symbolic tensor (shape {self.shape}) is not supported: index "
            "it (`x[:, 0]`) or split it with loopax.ops.split / ops.unstack.")

    def __bool__(self):
        raise TypeError(
            "A symbolic tensor has no value, so it cannot be used as a Python bool "
            "(`if x:`, `x and y`); use loopax.ops.where / ops.cond, or a Layer.")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __array__(self, *a, **k):
        raise TypeError(
            "A symbolic tensor (from loopax.Input or a layer called on one) has no "
            "value. Build a Model(inputs, outputs) and call it on data instead.")


class Node:
    """One layer call in a graph: `outputs = layer(*args, **kwargs)`."""

    def __init__(self, layer, args, kwargs, outputs):
        self.layer = layer
        self.args = args
        self.kwargs = kwargs
        self.outputs = outputs  # a pytree of SymbolicTensors
        self.input_tensors = [t for t in jax.tree_util.tree_leaves(
            (args, kwargs), is_leaf=is_symbolic) if is_symbolic(t)]
        self.output_tensors = [t for t in jax.tree_util.tree_leaves(
            outputs, is_leaf=is_symbolic) if is_symbolic(t)]


def is_symbolic(x) -> bool:
    return isinstance(x, SymbolicTensor)


def any_symbolic(tree) -> bool:
    # Variables and Tensors are leaves here: flattening a Tensor that a
    # GradientTape follows is refused (see loopax.src.tensor).
    return any(is_symbolic(t) for t in jax.tree_util.tree_leaves(
        tree, is_leaf=lambda t: isinstance(t, (SymbolicTensor, Variable, Tensor))))


# Sizes standing in for None dimensions while the output shape of a
# symbolic call is computed; an output dimension that follows them is None.
_PROBE_SIZES = (7, 11)


def to_probe_struct(t: SymbolicTensor, k: int):
    shape = tuple(_PROBE_SIZES[k] if d is None else d for d in t.shape)
    return jax.ShapeDtypeStruct(shape, np.dtype(t.dtype))


def merge_probe_shapes(a, b):
    """Output shapes from the two probes; dimensions that differ are None."""
    return tuple(x if x == y else None for x, y in zip(a, b))


def is_keras_tensor(x) -> bool:
    """Whether `x` is a symbolic tensor of the functional API (from
    `loopax.Input` or a layer called on one), as `keras.utils.is_keras_tensor`.

    Args:
        x: Any object.

    Returns:
        A Python bool (False for concrete arrays).
    """
    return is_symbolic(x)


def get_source_inputs(tensor) -> list:
    """The `Input` tensors that `tensor` is computed from, in discovery
    order (`keras.utils.get_source_inputs`).

    Args:
        tensor: A symbolic tensor of the functional API.

    Returns:
        A list of the `Input` tensors (`[tensor]` when it is one).

    Raises:
        ValueError: `tensor` is not symbolic.
    """
    if not is_symbolic(tensor):
        raise ValueError(f"get_source_inputs() takes a symbolic tensor (from loopax.Input "
                         f"and layers called on it); got {type(tensor).__name__}.")
    sources, seen, stack = [], set(), [tensor]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t.node is None or not t.node.input_tensors:
            sources.append(t)
        else:
            stack.extend(reversed(t.node.input_tensors))
    return sources
