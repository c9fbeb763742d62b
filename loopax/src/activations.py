"""Activation functions, by name or as callables (Keras 3 definitions).

Each one is a loopax op: it takes arrays, Variables or Tensors and a
recording GradientTape sees it. `get("relu")` returns the function,
`serialize(fn)` its name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src.tensor import op
from loopax.src.utils.registry import Registry, name_table


@op
def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """max(x, 0), with an optional leak below `threshold` and a cap at `max_value`."""
    x = jnp.asarray(x)
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return jax.nn.relu(x)
    out = jnp.where(x >= threshold, x, negative_slope * (x - threshold))
    if max_value is not None:
        out = jnp.minimum(out, max_value)
    return out


@op
def leaky_relu(x, negative_slope=0.2):
    return jax.nn.leaky_relu(x, negative_slope)


@op
def relu6(x):
    return jax.nn.relu6(x)


@op
def elu(x, alpha=1.0):
    return jax.nn.elu(x, alpha)


@op
def selu(x):
    return jax.nn.selu(x)


@op
def gelu(x, approximate=False):
    return jax.nn.gelu(x, approximate=approximate)


@op
def silu(x):
    """x · sigmoid(x)."""
    return jax.nn.silu(x)


swish = silu


@op
def hard_silu(x):
    return jax.nn.hard_silu(x)


hard_swish = hard_silu


@op
def sigmoid(x):
    return jax.nn.sigmoid(x)


@op
def hard_sigmoid(x):
    """0 below -3, 1 above 3, x/6 + 0.5 between."""
    return jax.nn.hard_sigmoid(x)


@op
def tanh(x):
    return jnp.tanh(x)


@op
def softplus(x):
    """log(1 + exp(x))."""
    return jax.nn.softplus(x)


@op
def softsign(x):
    """x / (1 + |x|)."""
    return jax.nn.soft_sign(x)


@op
def softmax(x, axis=-1):
    return jax.nn.softmax(x, axis=axis)


@op
def log_softmax(x, axis=-1):
    return jax.nn.log_softmax(x, axis=axis)


@op
def exponential(x):
    return jnp.exp(x)


@op
def mish(x):
    """x · tanh(softplus(x))."""
    return x * jnp.tanh(jax.nn.softplus(x))


def linear(x):
    """The identity."""
    return x


_REGISTRY = Registry("activation", name_table(
    [relu, leaky_relu, relu6, elu, selu, gelu, silu, hard_silu, sigmoid, hard_sigmoid,
     tanh, softplus, softsign, softmax, log_softmax, exponential, mish, linear],
    {"swish": silu, "hard_swish": hard_silu}))


def serialize(activation):
    """The name of a built-in activation; other callables come back unchanged."""
    return _REGISTRY.serialize(activation)


def deserialize(name, custom_objects=None):
    return _REGISTRY.deserialize(name, custom_objects)


def get(identifier):
    """An activation function from a name, a callable, or None (linear)."""
    return linear if identifier is None else _REGISTRY.get(identifier)
