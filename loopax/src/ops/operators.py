"""The ops behind Python operators on Variables and Tensors."""

import jax.numpy as jnp

from loopax.src.tensor import op

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
