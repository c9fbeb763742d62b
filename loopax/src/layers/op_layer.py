"""Ops on symbolic tensors: `ops.concatenate([a, b])` in a functional model.

Keras lets functional code call ops on `Input`s as if they were layers. An
op called with a `SymbolicTensor` among its arguments becomes an `OpLayer`:
a weightless layer that holds the op and its static arguments and takes the
symbolic tensors as its input, so the functional graph records (and later
replays) it like any layer call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.layers.layer import Layer
from loopax.src.layers.symbolic import SymbolicTensor, any_symbolic, is_symbolic
from loopax.src.naming import unique_name
from loopax.src.ops import operators
from loopax.src.tensor import register_symbolic_fallback


class OpLayer(Layer):
    """`fn(*args, **kwargs)` with the symbolic leaves of the arguments as inputs."""

    def __init__(self, fn, treedef, template, positions, name=None):
        super().__init__(name=name)
        self.fn = fn
        self._treedef, self._template, self._positions = treedef, template, positions

    @property
    def row_wise(self) -> bool:
        """An element-wise op treats each row on its own (`is_elementwise`)."""
        return is_elementwise(self)

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


# ---- Python operators on symbolic tensors ----------------------------------
# As on Keras's KerasTensor: arithmetic both ways, `@`, `**`, comparisons other
# than `==` (which stays identity, so symbolic tensors remain usable as dict
# keys), `&`/`|`/`^`/`~` as logical ops, unary `-`/`+`/`abs`, `round`, indexing.

def getitem(x, key):
    return x[key]


def _round(x, ndigits=None):
    return jnp.round(x, ndigits or 0)


def _raw(fn):
    return getattr(fn, "__loopax_op__", fn)


_BINARY = {"add": operators.add, "sub": operators.sub, "mul": operators.mul,
           "truediv": operators.truediv, "floordiv": operators.floordiv,
           "mod": operators.mod, "pow": operators.pow, "matmul": operators.matmul,
           "and": jnp.logical_and, "or": jnp.logical_or, "xor": jnp.logical_xor}
_COMPARISONS = {"lt": operators.lt, "le": operators.le, "gt": operators.gt,
                "ge": operators.ge, "ne": operators.ne}
_UNARY = {"neg": operators.neg, "pos": operators.pos, "abs": operators.abs,
          "invert": jnp.logical_not}


def _operand(x):
    # Python lists of numbers are arrays here, as for Keras's ops (`[[1., 2.]] @ x`).
    return np.asarray(x) if isinstance(x, (list, tuple)) else x


def _symbolic_operator(fn, reflected=False):
    fn = _raw(fn)
    if reflected:
        return lambda self, other: call_on_symbolic(fn, (_operand(other), self), {})
    return lambda self, other: call_on_symbolic(fn, (self, _operand(other)), {})


def _symbolic_unary(fn):
    fn = _raw(fn)
    return lambda self: call_on_symbolic(fn, (self,), {})


def _install_symbolic_operators(cls):
    """Gives `cls` Python's operators, each recorded as an op on symbolic tensors."""
    for name, fn in _BINARY.items():
        setattr(cls, f"__{name}__", _symbolic_operator(fn))
        setattr(cls, f"__r{name}__", _symbolic_operator(fn, reflected=True))
    for name, fn in _COMPARISONS.items():
        setattr(cls, f"__{name}__", _symbolic_operator(fn))
    for name, fn in _UNARY.items():
        setattr(cls, f"__{name}__", _symbolic_unary(fn))
    cls.__getitem__ = lambda self, key: call_on_symbolic(getitem, (self, key), {})
    cls.__round__ = lambda self, ndigits=None: call_on_symbolic(_round, (self, ndigits), {})
    cls.reshape = lambda self, *shape: call_on_symbolic(
        jnp.reshape, (self, shape[0] if len(shape) == 1 else shape), {})
    cls.squeeze = lambda self, axis=None: call_on_symbolic(jnp.squeeze, (self, axis), {})


_install_symbolic_operators(SymbolicTensor)

_ELEMENTWISE = frozenset(id(_raw(fn)) for table in (_BINARY, _COMPARISONS, _UNARY)
                         for name, fn in table.items() if name != "matmul")


def is_elementwise(layer: OpLayer) -> bool:
    """Whether `layer`'s op works entry by entry (a Python operator other than
    `@`, or a NumPy-style ufunc): each row of its output depends on that row of
    its inputs only."""
    return id(_raw(layer.fn)) in _ELEMENTWISE or isinstance(layer.fn, jnp.ufunc)
