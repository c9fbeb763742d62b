"""The ops behind Python operators on Variables and Tensors, and the one
place that installs them (on `state.ArrayValue`, which both subclass)."""

import jax.numpy as jnp

from loopax.src.state import ArrayValue
from loopax.src.tensor import Tensor, op

add = op(jnp.add)
sub = op(jnp.subtract)
mul = op(jnp.multiply)
truediv = op(jnp.true_divide)
floordiv = op(jnp.floor_divide)
mod = op(jnp.mod)
pow = op(jnp.power)
matmul = op(jnp.matmul)
lt = op(jnp.less)
le = op(jnp.less_equal)
gt = op(jnp.greater)
ge = op(jnp.greater_equal)
eq = op(jnp.equal)
ne = op(jnp.not_equal)
neg = op(jnp.negative)
pos = op(jnp.positive)
abs = op(jnp.abs)
invert = op(jnp.invert)
getitem = op(lambda x, idx: x[idx])
transpose = op(jnp.transpose)


@op
def and_(x, y):
    return jnp.logical_and(x, y) if x.dtype == jnp.bool_ else jnp.bitwise_and(x, y)


@op
def or_(x, y):
    return jnp.logical_or(x, y) if x.dtype == jnp.bool_ else jnp.bitwise_or(x, y)


@op
def xor(x, y):
    return jnp.logical_xor(x, y) if x.dtype == jnp.bool_ else jnp.bitwise_xor(x, y)


globals()["and"] = and_
globals()["or"] = or_


def _binary(fn, reflected=False):
    if reflected:
        return lambda self, other: fn(other, self)
    return lambda self, other: fn(self, other)


def _install_operators(cls):
    """Gives `cls` Python's arithmetic, comparison and indexing operators as loopax ops."""
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                 "matmul", "and", "or", "xor"):
        fn = globals()[name]
        setattr(cls, f"__{name}__", _binary(fn))
        setattr(cls, f"__r{name}__", _binary(fn, reflected=True))
    for name in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(cls, f"__{name}__", _binary(globals()[name]))
    for name in ("neg", "pos", "abs", "invert"):
        setattr(cls, f"__{name}__", globals()[name])
    cls.__getitem__ = getitem


_install_operators(ArrayValue)
Tensor.T = property(transpose)
