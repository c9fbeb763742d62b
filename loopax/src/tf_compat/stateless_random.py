"""TensorFlow's stateless random ops (`tf.random.stateless_*`, `split`,
`fold_in`): the numbers are a function of `seed`, a pair of ints.

They have TensorFlow's shapes, dtypes and distributions, not its bit streams:
the seed goes through `jax.random` (threefry), so a given seed gives other
numbers than TensorFlow's Philox. The tf.image `stateless_random_*` ops key
their draws the same way.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src.state import Variable
from loopax.src.tf_compat import dtypes
from loopax.src.tf_compat.tensors import Tensor, as_tensor, static_ints


def _unwrap(x):
    return x.value if isinstance(x, Variable) else x._loopax_value if isinstance(x, Tensor) else x


def seed_array(seed, owner):
    """`seed` (a pair of ints, a tuple of scalar Tensors, a shape-(2,) Tensor) as
    an integer array of shape (2,)."""
    if isinstance(seed, (list, tuple)):
        seed = jnp.stack([jnp.asarray(_unwrap(s)).reshape(()) for s in seed]) if seed else seed
    seed = jnp.asarray(_unwrap(seed))
    if seed.shape != (2,) or not jnp.issubdtype(seed.dtype, jnp.integer):
        raise ValueError(f"{owner}: `seed` must be a pair of ints, e.g. seed=(1, 2) (or a "
                         f"shape-[2] integer tensor); got {seed!r}.")
    return seed


def key(seed, owner):
    """The JAX key a stateless seed stands for."""
    seed = seed_array(seed, owner).astype(jnp.uint32)
    return jax.random.wrap_key_data(seed)


def _seed_like(raw, seed):
    """uint32 key data as seeds of `seed`'s integer dtype (bit-cast for int32)."""
    dtype = seed.dtype
    if jnp.dtype(dtype).itemsize == 4:
        return jax.lax.bitcast_convert_type(raw, dtype)
    return raw.astype(dtype)


def split(seed, num=2, alg="auto_select"):
    """`num` new seeds (shape [num, 2]) derived from `seed`."""
    base = seed_array(seed, "tf.random.split")
    raw = jax.random.key_data(jax.random.split(key(base, "tf.random.split"), int(num)))
    return as_tensor(_seed_like(raw, base))


def fold_in(seed, data, alg="auto_select"):
    """A new seed (shape [2]) from `seed` and the integer `data`."""
    base = seed_array(seed, "tf.random.fold_in")
    folded = jax.random.fold_in(key(base, "tf.random.fold_in"), jnp.asarray(_unwrap(data)))
    return as_tensor(_seed_like(jax.random.key_data(folded), base))


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None,
                      alg="auto_select"):
    """Uniform samples in [minval, maxval) (maxval defaults to 1 for floats and is
    required for integers), determined by `seed`."""
    shape = static_ints(shape, "tf.random.stateless_uniform(shape=)")
    k = key(seed, "tf.random.stateless_uniform")
    dtype = dtypes.storage_dtype(dtype)
    if jnp.issubdtype(dtype, jnp.integer):
        if maxval is None:
            raise ValueError("tf.random.stateless_uniform: an integer dtype needs `maxval=`.")
        return as_tensor(jax.random.randint(k, shape, minval, maxval, dtype))
    return as_tensor(jax.random.uniform(k, shape, dtype, minval, 1 if maxval is None else maxval))


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None,
                     alg="auto_select"):
    """Samples of N(mean, stddev ** 2), determined by `seed`."""
    shape = static_ints(shape, "tf.random.stateless_normal(shape=)")
    k = key(seed, "tf.random.stateless_normal")
    dtype = dtypes.storage_dtype(dtype)
    return as_tensor(mean + stddev * jax.random.normal(k, shape, dtype))


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                               name=None, alg="auto_select"):
    """N(mean, stddev ** 2) samples within two standard deviations, determined by `seed`."""
    shape = static_ints(shape, "tf.random.stateless_truncated_normal(shape=)")
    k = key(seed, "tf.random.stateless_truncated_normal")
    dtype = dtypes.storage_dtype(dtype)
    return as_tensor(mean + stddev * jax.random.truncated_normal(k, -2.0, 2.0, shape, dtype))
