"""Symbolic tensors and graph nodes: what the functional API is built from.

`loopax.Input(shape=(784,))` returns a `SymbolicTensor`: a shape and dtype
with no value, remembering which layer call produced it. Calling a layer on
symbolic tensors records a `Node` and returns new symbolic tensors; a
functional `Model(inputs, outputs)` replays those nodes.
"""

from __future__ import annotations

import jax
import numpy as np

from loopax.src import activations, dtypes
from loopax.src.api_export import export
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


@export("loopax.backend.is_keras_tensor", "loopax.utils.is_keras_tensor")
def is_keras_tensor(x) -> bool:
    """Whether `x` is a symbolic tensor of the functional API (from
    `loopax.Input` or a layer called on one), as `keras.utils.is_keras_tensor`.

    Args:
        x: Any object.

    Returns:
        A Python bool (False for concrete arrays).
    """
    return is_symbolic(x)


@export("loopax.utils.get_source_inputs")
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


# ---- closed-form output shapes ---------------------------------------------
# A functional graph is built by calling each layer on symbolic tensors; the
# output's shape is found by tracing `call` twice (`Layer._symbolic_outputs`),
# ~3 ms a call. Layers whose output shape has a closed form register their
# `compute_output_shape` here, and a plain call on float inputs uses it instead.

_CLOSED_FORM_CLASSES = set()
_closed_form_by_class = {}


def closed_form_output_shape(cls):
    """Class decorator: `cls.compute_output_shape` is a closed form of the shape
    `cls.call` returns (no tracing), used when graphs are built. A subclass that
    overrides `call` (or `compute_output_shape`) is traced again."""
    _CLOSED_FORM_CLASSES.add(cls)
    _closed_form_by_class.clear()
    return cls


def _defining_class(cls, attribute):
    return next((k for k in cls.__mro__ if attribute in vars(k)), None)


def _has_closed_form(cls) -> bool:
    known = _closed_form_by_class.get(cls)
    if known is None:
        owner = _defining_class(cls, "compute_output_shape")
        call_owner = _defining_class(cls, "call")
        known = owner in _CLOSED_FORM_CLASSES and issubclass(owner, call_owner)
        _closed_form_by_class[cls] = known
    return known


# Built-in activations whose output is not the input's shape: GLU halves the last axis.
_SHAPE_CHANGING_ACTIVATIONS = ("glu",)


def _keeps_shape(activation) -> bool:
    """Whether `activation` is one of loopax's activations that keep the shape
    (a user's function, or any other op, may not)."""
    return any(activation is fn for name, fn in activations._REGISTRY.objects.items()
               if name not in _SHAPE_CHANGING_ACTIVATIONS)


def _plain_inputs(args, kwargs):
    """The symbolic input(s) of a call `layer(x)` / `layer([x, y, ...])` with at
    most a Python `training` flag, else None."""
    if len(args) != 1 or set(kwargs) - {"training"} or is_symbolic(kwargs.get("training")):
        return None
    x = args[0]
    if is_symbolic(x):
        return x
    if isinstance(x, (list, tuple)) and x and all(is_symbolic(t) for t in x):
        return x
    return None


def closed_form_outputs(layer, args, kwargs):
    """The output of `layer(*args, **kwargs)` on symbolic inputs from the layer's
    closed-form `compute_output_shape`, or None where the call must be traced.

    Only for registered layers called on float inputs that are cast to the
    layer's float compute dtype (the output then has that dtype), with one of
    loopax's shape-keeping activations (a user's may change the shape). Where the closed form
    raises, None too: the trace reports the error as any call does."""
    if not _has_closed_form(type(layer)):
        return None
    inputs = _plain_inputs(args, kwargs)
    policy = layer.dtype_policy
    if (inputs is None or not (layer.autocast and layer._convert_input_args)
            or not policy.computes_in_float or policy.quantization_mode is not None):
        return None
    activation = getattr(layer, "activation", None)
    if activation is not None and not _keeps_shape(activation):
        return None
    tensors = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    if not all(dtypes.is_float(t.dtype) for t in tensors):
        return None
    shapes = type(inputs)(t.shape for t in tensors) if tensors is inputs else inputs.shape
    try:
        shape = layer.compute_output_shape(shapes)
    except Exception:
        return None
    return SymbolicTensor(shape, policy.compute_dtype, name=layer.name)


def same_output_shape(layer, input_shape):
    """`compute_output_shape` of a layer whose output has its input's shape
    (`compute_output_shape = same_output_shape` in the class body)."""
    return tuple(input_shape)
