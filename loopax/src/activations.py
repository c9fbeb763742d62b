"""Activation functions, by name or as callables (Keras 3 definitions).

Each one is a loopax op: it takes arrays, Variables or Tensors and a
recording GradientTape sees it. `get("relu")` returns the function,
`serialize(fn)` its name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.ops.nn import (
    celu,
    elu,
    glu,
    hard_shrink,
    hard_sigmoid,
    hard_silu,
    hard_tanh,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_shrink,
    softmax,
    softplus,
    softsign,
    sparse_plus,
    sparse_sigmoid,
    sparsemax,
    squareplus,
    tanh_shrink,
    threshold,
)
from loopax.src.ops.numpy import tanh
from loopax.src.tensor import op
from loopax.src.utils.registry import Registry, name_table

# Public under Keras's activation names, defined as ops or by JAX.
export("loopax.activations.hard_sigmoid")(hard_sigmoid)
export("loopax.activations.hard_silu")(hard_silu)
export("loopax.activations.hard_tanh")(hard_tanh)
export("loopax.activations.log_sigmoid")(log_sigmoid)
export("loopax.activations.relu6")(relu6)
export("loopax.activations.selu")(selu)
export("loopax.activations.sigmoid")(sigmoid)
export("loopax.activations.silu")(silu)
export("loopax.activations.softplus")(softplus)
export("loopax.activations.softsign")(softsign)
export("loopax.activations.tanh")(tanh)

swish = silu
export("loopax.activations.swish")(swish)
hard_swish = hard_silu
export("loopax.activations.hard_swish")(hard_swish)


@export("loopax.activations.relu")
@op
def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """max(x, 0), with an optional leak below `threshold` and a cap at `max_value`.

    Args:
        x: Input array.
        negative_slope: The slope below `threshold` (0: plain ReLU).
        max_value: The largest output, or None for no cap.
        threshold: Inputs below it are leaked (or zeroed).

    Returns:
        An array of `x`'s shape.
    """
    x = jnp.asarray(x)
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return jax.nn.relu(x)
    out = jnp.where(x >= threshold, x, negative_slope * (x - threshold))
    if max_value is not None:
        out = jnp.minimum(out, max_value)
    return out


@export("loopax.activations.gelu")
@op
def gelu(x, approximate=False):
    """Gaussian error linear unit, `x * Phi(x)`; exact by default, as Keras's activation.

    Args:
        x: Input array.
        approximate: Use the tanh approximation.

    Returns:
        An array of `x`'s shape.
    """
    return jax.nn.gelu(x, approximate=approximate)


@export("loopax.activations.exponential")
@op
def exponential(x):
    """`exp(x)`.

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape.
    """
    return jnp.exp(x)


@export("loopax.activations.mish")
@op
def mish(x):
    """x · tanh(softplus(x)).

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape.
    """
    return x * jnp.tanh(jax.nn.softplus(x))


@export("loopax.activations.linear")
def linear(x):
    """The identity.

    Args:
        x: Input array.

    Returns:
        `x` unchanged.
    """
    return x


# The activations that are plain loopax ops are those same ops (one definition,
# compiled for eager calls); names are given explicitly since an op's
# `__name__` can differ (jax.nn.soft_sign).
_REGISTRY = Registry("activation", name_table(
    [relu, gelu, exponential, mish, linear],
    {"leaky_relu": leaky_relu, "relu6": relu6, "elu": elu, "selu": selu, "silu": silu,
     "hard_silu": hard_silu, "sigmoid": sigmoid, "hard_sigmoid": hard_sigmoid, "tanh": tanh,
     "softplus": softplus, "softsign": softsign, "softmax": softmax,
     "log_softmax": log_softmax, "swish": silu, "hard_swish": hard_silu,
     "celu": celu, "glu": glu, "hard_shrink": hard_shrink, "hard_tanh": hard_tanh,
     "log_sigmoid": log_sigmoid, "soft_shrink": soft_shrink, "sparse_plus": sparse_plus,
     "sparse_sigmoid": sparse_sigmoid, "sparsemax": sparsemax, "squareplus": squareplus,
     "tanh_shrink": tanh_shrink, "threshold": threshold}))


@export("loopax.activations.serialize")
def serialize(activation):
    """The name of a built-in activation; other callables come back unchanged.

    Args:
        activation: An activation function.

    Returns:
        Its registered name (`"relu"`), or the callable itself.
    """
    return _REGISTRY.serialize(activation)


@export("loopax.activations.deserialize")
def deserialize(name, custom_objects=None):
    """The activation function a name (or Keras config) refers to.

    Args:
        name: A registered name such as `"relu"`, or a Keras config dict.
        custom_objects: `{name: function}` for custom activations.

    Returns:
        The activation function.

    Raises:
        ValueError: the name is unknown.
    """
    return _REGISTRY.deserialize(name, custom_objects)


@export("loopax.activations.get")
def get(identifier):
    """An activation function from a name, a callable, or None (linear).

    Args:
        identifier: A name (`"relu"`), a Keras config, a callable, or None.

    Returns:
        The activation function (`linear` for None).

    Raises:
        ValueError: `identifier` cannot be interpreted.
    """
    return linear if identifier is None else _REGISTRY.get(identifier)
