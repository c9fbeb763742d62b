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
import numpy as np

from loopax.src import random as loopax_random
from loopax.src.tensor import unwrap
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


class Generator:
    """`tf.random.Generator`: a random-number generator with its own state (a
    non-trainable `Variable`, so draws advance it eagerly and inside
    `tf.function`, and a `tf.Module` holding one tracks it).

    Make one with `tf.random.Generator.from_seed(seed)` or
    `from_non_deterministic_state()`; `normal`, `uniform`, `truncated_normal`,
    `binomial`, `make_seeds` and `split` draw from it. The same seed gives the
    same numbers every run; they differ from TensorFlow's (another algorithm:
    JAX's threefry), their statistics do not.

    Args:
        copy_from: Another Generator to copy the state of.
        state: A state as `Generator.state` holds it (two uint32 words).
        alg: Accepted for TensorFlow compatibility; JAX's threefry is used.
    """

    _loopax_trackable = True

    def __init__(self, copy_from=None, state=None, alg=None):
        self._generator = loopax_random.SeedGenerator(0, name="generator")
        if copy_from is not None:
            state = copy_from.state.value
        if state is not None:
            self._generator.state.assign(jnp.asarray(jnp.ravel(jnp.asarray(state))[-2:],
                                                     jnp.uint32))
        self.algorithm = alg

    @classmethod
    def from_seed(cls, seed, alg=None):
        """A Generator whose draws are fixed by the int `seed`."""
        generator = cls(alg=alg)
        generator.reset_from_seed(seed)
        return generator

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        """A Generator seeded from the operating system's entropy."""
        import secrets
        return cls.from_seed(secrets.randbits(31), alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg=None):
        """A Generator from a key (int) and a counter (its first word)."""
        counter = int(np.asarray(unwrap(counter)).reshape(-1)[0])
        key = int(np.asarray(unwrap(key)).reshape(-1)[0])
        return cls(state=np.array([counter % 2**32, key % 2**32], np.uint32), alg=alg)

    @property
    def state(self):
        """The state Variable (two uint32 words)."""
        return self._generator.state

    @property
    def variables(self):
        return [self._generator.state]

    @property
    def key(self):
        """The key word of the state."""
        return as_tensor(self._generator.state.value[1])

    def reset_from_seed(self, seed):
        """Restarts the sequence from `seed`."""
        self._generator.state.assign(jnp.asarray([0, _mixed_generator_seed(seed)], jnp.uint32))

    def reset(self, state):
        """Sets the state (as `state` holds it)."""
        self._generator.state.assign(jnp.asarray(state, jnp.uint32).reshape(2))

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        """Samples of N(mean, stddev ** 2) of shape `shape`."""
        return as_tensor(loopax_random.normal(static_ints(shape, "normal(shape=)"), mean,
                                              stddev, dtype=dtype, seed=self._generator))

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        """N(mean, stddev ** 2) samples redrawn beyond two standard deviations."""
        return as_tensor(loopax_random.truncated_normal(
            static_ints(shape, "truncated_normal(shape=)"), mean, stddev, dtype=dtype,
            seed=self._generator))

    def uniform(self, shape, minval=0, maxval=None, dtype=dtypes.float32, name=None):
        """Samples uniform in [minval, maxval) (`maxval` defaults to 1 for floats and
        is required for integers, as TensorFlow)."""
        shape = static_ints(shape, "uniform(shape=)")
        if jnp.issubdtype(dtype, jnp.integer):
            if maxval is None:
                raise ValueError("Generator.uniform: an integer dtype needs `maxval=`.")
            return as_tensor(loopax_random.randint(shape, minval, maxval, dtype=dtype,
                                                   seed=self._generator))
        return as_tensor(loopax_random.uniform(shape, minval, 1 if maxval is None else maxval,
                                               dtype=dtype, seed=self._generator))

    def uniform_full_int(self, shape, dtype=dtypes.uint64, name=None):
        """Integers uniform over the whole range of `dtype`."""
        shape = static_ints(shape, "uniform_full_int(shape=)")
        dtype = dtypes.storage_dtype(dtype)
        bits = jax.random.bits(self._generator.next(), shape, jnp.dtype(
            f"uint{jnp.dtype(dtype).itemsize * 8}"))
        return as_tensor(jax.lax.bitcast_convert_type(bits, dtype))

    def binomial(self, shape, counts, probs, dtype=dtypes.int32, name=None):
        """Binomial(counts, probs) samples of shape `shape`."""
        shape = static_ints(shape, "binomial(shape=)")
        out = loopax_random.binomial(shape, jnp.asarray(unwrap(counts), jnp.float32),
                                     jnp.asarray(unwrap(probs), jnp.float32),
                                     seed=self._generator)
        return as_tensor(jnp.asarray(out).astype(dtypes.storage_dtype(dtype)))

    def make_seeds(self, count=1):
        """`count` seeds for the stateless ops, a (2, count) int64 tensor."""
        bits = jax.random.randint(self._generator.next(), (2, int(count)), 0, 2**31 - 1,
                                  jnp.int32)
        return as_tensor(bits.astype(dtypes.storage_dtype(dtypes.int64)))

    def split(self, count=1):
        """`count` new Generators, each with a state drawn from this one."""
        seeds = np.asarray(jax.random.randint(self._generator.next(), (int(count),), 0,
                                              2**31 - 1, jnp.int32))
        return [Generator.from_seed(int(seed)) for seed in seeds]

    def skip(self, delta):
        """Advances the state as `delta` draws would."""
        for _ in range(int(delta)):
            self._generator.next()


def _mixed_generator_seed(seed):
    return int(np.asarray(unwrap(seed)).reshape(-1)[0]) % 2**31


_global_generator = []


def get_global_generator():
    """The global Generator (made from the global seed on first use)."""
    if not _global_generator:
        _global_generator.append(
            Generator.from_seed(_global_seed[0]) if _global_seed[0] is not None
            else Generator.from_non_deterministic_state())
    return _global_generator[0]


def set_global_generator(generator):
    """Makes `generator` the global Generator.

    Args:
        generator: A `tf.random.Generator`.
    """
    _global_generator[:] = [generator]


document_module(globals())
