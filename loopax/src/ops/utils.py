"""Small helpers shared by the op modules."""

import jax
import jax.numpy as jnp


def as_array(x):
    """`x` as a `jax.Array` (float64 NumPy input becomes float32, as JAX does)."""
    return x if isinstance(x, jax.Array) else jnp.asarray(x)


def axis_arg(axis):
    """Keras accepts lists for axes; JAX wants hashable tuples."""
    return tuple(axis) if isinstance(axis, list) else axis
