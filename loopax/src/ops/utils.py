"""Small helpers shared by the op modules."""

import functools

import jax
import jax.numpy as jnp


def as_array(x):
    """`x` as a `jax.Array` (float64 NumPy input becomes float32, as JAX does)."""
    return x if isinstance(x, jax.Array) else jnp.asarray(x)


def axis_arg(axis):
    """Keras accepts lists for axes; JAX wants hashable tuples."""
    return tuple(axis) if isinstance(axis, list) else axis


def compiled(*static_argnames):
    """Runs a composite op's pure function as one `jax.jit` call.

    Eagerly, an op built from several JAX operations then costs one
    dispatch instead of one per operation (and one compile per input
    signature). `static_argnames` name the non-array arguments (axis,
    strides, padding, ...); lists among them are made tuples so they hash.
    Inside an outer `jax.jit` the call is simply inlined.
    """
    def decorate(fn):
        jitted = jax.jit(fn, static_argnames=static_argnames)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                return jitted(*args, **kwargs)
            except ValueError as e:
                if "Non-hashable static arguments" not in str(e):
                    raise
            return jitted(*map(_hashable, args), **{k: _hashable(v) for k, v in kwargs.items()})

        return call

    return decorate


def _hashable(x):
    return tuple(_hashable(e) for e in x) if isinstance(x, (list, tuple)) else x
