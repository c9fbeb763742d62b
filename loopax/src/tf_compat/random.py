"""`tf.random`: TensorFlow's signatures and seeding.

As in TensorFlow 2: with `seed=None` each call draws fresh numbers from the
global generator (`tf.random.set_seed` makes the run repeat); with an int
op `seed`, calls draw from a sequence keyed by (global seed, op seed): the
first call after `set_seed` gives the same numbers every run, the next call
different ones (TensorFlow's eager behaviour). The numbers differ from
TensorFlow's (another generator); the statistics and repeatability do not.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src import random as loopax_random
from loopax.src.tf_compat import dtypes
from loopax.src.tf_compat.tensors import as_tensor, document_module, static_ints

_op_generators: dict[tuple, loopax_random.SeedGenerator] = {}
_global_seed = [None]


def set_seed(seed):
    """Seeds TensorFlow-name random ops, layer initializers, Python's `random`
    and NumPy (`loopax.utils.set_random_seed`); op-seeded sequences restart."""
    loopax_random.set_random_seed(int(seed))
    _global_seed[0] = int(seed)
    for (global_seed, op_seed), generator in _op_generators.items():
        generator.state.assign(jnp.asarray([0, _mixed(op_seed)], jnp.uint32))


def _mixed(op_seed):
    return (int(op_seed) * 1_000_003 + (_global_seed[0] or 0)) % 2**31


def _seed(seed):
    """The loopax seed for a TF op seed: None -> the global generator; an int -> a
    generator of its own that advances each call."""
    if seed is None or not isinstance(seed, int):
        return seed
    key = ("op", seed)
    generator = _op_generators.get(key)
    if generator is None:
        with jax.ensure_compile_time_eval():
            generator = _op_generators[key] = loopax_random.SeedGenerator(_mixed(seed))
    return generator


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Samples of N(mean, stddev ** 2) of shape `shape`."""
    return as_tensor(loopax_random.normal(static_ints(shape, "normal(shape=)"), mean, stddev,
                                          dtype=dtype, seed=_seed(seed)))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """N(mean, stddev ** 2) samples redrawn beyond two standard deviations."""
    return as_tensor(loopax_random.truncated_normal(
        static_ints(shape, "truncated_normal(shape=)"), mean, stddev, dtype=dtype,
        seed=_seed(seed)))


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Samples uniform in [minval, maxval) (`maxval` defaults to 1 for floats and
    is required for integers, as TensorFlow)."""
    shape = static_ints(shape, "uniform(shape=)")
    if jnp.issubdtype(dtype, jnp.integer):
        if maxval is None:
            raise ValueError("tf.random.uniform: an integer dtype needs `maxval=`.")
        return as_tensor(loopax_random.randint(shape, minval, maxval, dtype=dtype,
                                               seed=_seed(seed)))
    return as_tensor(loopax_random.uniform(shape, minval, 1 if maxval is None else maxval,
                                           dtype=dtype, seed=_seed(seed)))


def shuffle(value, seed=None, name=None):
    """`value` permuted along its first axis."""
    return as_tensor(loopax_random.shuffle(value, axis=0, seed=_seed(seed)))


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """`num_samples` class indices per row of `logits` (batch, classes), drawn with
    probabilities softmax(logits); shape (batch, num_samples)."""
    key = loopax_random.draw_key(_seed(seed))
    logits = jnp.asarray(logits)
    samples = jax.random.categorical(key, logits, axis=-1,
                                     shape=(int(num_samples), logits.shape[0]))
    return as_tensor(samples.T.astype(dtypes.storage_dtype(dtype or dtypes.int64)))


document_module(globals())
