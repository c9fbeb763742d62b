"""Random numbers with explicit, variable-held seed state.

Every function takes `seed=`: an int (the same numbers each call), a
`SeedGenerator` (advances its state variable each call, so inside a
stateless call the new state comes back with the other non-trainable
variables), a JAX PRNG key, or None (the global generator that
`loopax.utils.set_random_seed` seeds). `fit`/`evaluate`/`predict` steps and
`loopax.function` carry the global generator's state like any other state, so
`seed=None` draws fresh numbers every step there; inside a bare `jax.jit` it
raises (use a SeedGenerator there).
"""

from __future__ import annotations

import functools
import random as _py_random

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import dtypes
from loopax.src.api_export import export
from loopax.src.naming import name_scope, unique_name
from loopax.src.state import StateScope, Variable, _state, is_tracer, tracing
from loopax.src.tensor import unwrap


class SeedGenerator:
    """Holds a PRNG state in a non-trainable `Variable` and hands out keys.

    `next()` returns a fresh key and advances the state by assignment, so the
    generator works eagerly, under a `StateScope` (stateless calls, fit) and
    under `loopax.function` alike.

    Args:
        seed: an int; None draws one from Python's `random` (which
            `set_random_seed` seeds).
    """

    _loopax_trackable = True  # Modules holding one track its state variable

    def __init__(self, seed=None, name=None):
        self.name = name or unique_name("seed_generator")
        if seed is None:
            seed = _py_random.randint(0, 2**31 - 1)
        if not isinstance(seed, (int, np.integer)):
            raise TypeError(f"SeedGenerator(seed=...) must be an int or None, got {seed!r}.")
        with name_scope(self.name, caller=self):
            self.state = Variable(
                np.array([0, int(seed)], dtype=np.uint32), dtype="uint32",
                trainable=False, name="seed_generator_state")
        self.state.is_seed_state = True  # not a weight: Layer.weights leaves it out

    @property
    def variables(self):
        return [self.state]

    def next(self):
        value = self.state.value
        if is_tracer(value) or not prefix_stable_draws():
            state, sub = _advance(value)
        else:
            state, sub = jax.device_put(tuple(_split_on_host(np.asarray(value))))
        self.state.assign(state)
        return jax.random.wrap_key_data(sub)


@jax.jit
def _advance(state):
    """(next state, a fresh key's data) from a generator state: one compiled
    program for every generator, instead of a handful of eager ops each."""
    key, sub = jax.random.split(jax.random.wrap_key_data(state))
    return jax.random.key_data(key), jax.random.key_data(sub)


def _split_on_host(state):
    """`_advance(state)` computed in Python, for partitionable threefry: split's two
    keys are the 20-round Threefry-2x32 of the counters (0, 0) and (0, 1) under the
    state. Eagerly (building a model's weights) this saves compiling `_advance`,
    0.1 s of a small script's first run; a key then takes about 0.1 ms, mostly
    `device_put`, against 0.07 ms for the compiled call."""
    k0, k1 = (int(word) for word in state)
    keys = [_threefry2x32(k0, k1, 0, counter) for counter in (0, 1)]
    return np.array(keys, dtype=np.uint32)   # rows: the next state, the key handed out


def _threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011), on Python ints, as JAX's
    `threefry2x32_p` computes it: the counter pair (x0, x1) enciphered under (k0, k1)."""
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0, x1 = (x0 + ks[0]) & _MASK32, (x1 + ks[1]) & _MASK32
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = (x0 + x1) & _MASK32
            x1 = (((x1 << r) | (x1 >> (32 - r))) & _MASK32) ^ x0
        x0 = (x0 + ks[(i + 1) % 3]) & _MASK32
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & _MASK32
    return x0, x1


_MASK32 = 0xFFFFFFFF
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


_global_generator: SeedGenerator | None = None


def global_seed_generator() -> SeedGenerator:
    """The generator of random ops called with `seed=None`.

    Its state Variable lives as long as the process (`set_random_seed` assigns
    it), so compiled steps that carry it keep carrying the same Variable."""
    global _global_generator
    if _global_generator is None:
        _global_generator = SeedGenerator(name="global_seed_generator")
    return _global_generator


def set_global_seed(seed: int):
    global _global_generator
    if _global_generator is None:
        _global_generator = SeedGenerator(seed, name="global_seed_generator")
    else:
        _global_generator.state.assign(np.array([0, int(seed)], dtype=np.uint32))


def global_seed_state() -> Variable:
    """The global generator's state: `fit`/`evaluate`/`predict` steps and
    `loopax.function` carry it as state, so unseeded random ops inside them
    draw fresh numbers every step."""
    return global_seed_generator().state


def shape_inference_scope() -> StateScope:
    """A StateScope for abstract evaluation (symbolic calls, output specs): it
    maps the global seed state, so unseeded random ops work there, and
    collects every assignment, so none leaves the probe."""
    state = global_seed_state()
    return StateScope([(state, state.value)])


_UNSEEDED_UNDER_TRACE = (
    "[loopax RNG] A random op without a seed (seed=None) was called while JAX traced a "
    "function that does not carry loopax's global seed state (e.g. a bare `jax.jit`, or "
    "`stateless_call` inside one): its numbers would be traced once and become "
    "constants. Use seeded random ops: create a `loopax.random.SeedGenerator`, attach "
    "it to your layer/model and pass it as `seed=`, e.g.\n\n"
    "    self.seed_generator = loopax.random.SeedGenerator(seed=1337)\n"
    "    ...\n"
    "    out = loopax.random.normal(shape=(1,), seed=self.seed_generator)\n\n"
    "or compile with `loopax.function` / call it from `fit()`, `evaluate()` or "
    "`predict()`, which carry the global seed state.")


def _draw_global_key():
    state = global_seed_state()
    # Carried: a scope maps it (a compiled step, a shape probe) or lifts it
    # into the trace (loopax.function).
    carried = is_tracer(state.value) or any(
        scope.get_current_value(state) is not None for scope in _state.scopes)
    if not carried and tracing():
        raise ValueError(_UNSEEDED_UNDER_TRACE)
    return global_seed_generator().next()


def draw_key(seed):
    """A JAX PRNG key from `seed` (int, SeedGenerator, key or None)."""
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if seed is None:
        return _draw_global_key()
    if isinstance(seed, (int, np.integer)):
        return jax.random.key(int(seed))
    seed = unwrap(seed)
    if hasattr(seed, "dtype") and jnp.issubdtype(seed.dtype, jax.dtypes.prng_key):
        return seed
    if hasattr(seed, "shape") and tuple(seed.shape) == (2,):
        return jax.random.wrap_key_data(jnp.asarray(seed, dtype=jnp.uint32))
    raise TypeError(
        f"seed must be an int, a loopax.random.SeedGenerator, a JAX PRNG key or "
        f"None; got {type(seed).__name__}.")


def prefix_stable_draws() -> bool:
    """Whether entry i of a draw is the same at any draw size: JAX's threefry in
    its partitionable form (the default) computes each entry from its index.
    Initializers then draw weights at a few bucketed sizes, and a padded batch's
    dropout draws its real rows' numbers (trainers/padded_batches.py)."""
    return bool(jax.config.jax_threefry_partitionable) and \
        jax.config.jax_default_prng_impl == "threefry2x32"


def _dtype(dtype):
    return dtypes.standardize(dtype) if dtype is not None else dtypes.floatx()


# Each sampler is one compiled program per (shape, dtype): eagerly (building a
# model's weights) that is one compile per weight shape instead of one per op.
@functools.partial(jax.jit, static_argnames=("shape", "dtype"))
def _normal(key, mean, stddev, shape, dtype):
    return mean + stddev * jax.random.normal(key, shape, dtype)


@functools.partial(jax.jit, static_argnames=("shape", "dtype"))
def _truncated_normal(key, mean, stddev, shape, dtype):
    return mean + stddev * jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples of N(mean, stddev²), shape `shape`."""
    key = draw_key(seed)
    return _normal(key, mean, stddev, tuple(shape), _dtype(dtype))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples of U[minval, maxval), shape `shape`."""
    key = draw_key(seed)
    return jax.random.uniform(key, tuple(shape), _dtype(dtype), minval, maxval)


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers uniform in [minval, maxval), shape `shape`."""
    key = draw_key(seed)
    return jax.random.randint(key, tuple(shape), minval, maxval, dtypes.standardize(dtype))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """N(mean, stddev²) cut at two standard deviations."""
    key = draw_key(seed)
    return _truncated_normal(key, mean, stddev, tuple(shape), _dtype(dtype))


def categorical(logits, num_samples, dtype="int32", seed=None):
    """Class indices drawn from each row's softmax(logits).

    Args:
        logits: `(batch, classes)` unnormalized log-probabilities.
        num_samples: Independent draws per row.
        dtype: The integer dtype of the result.
        seed: As for every loopax.random function.

    Returns:
        `(batch, num_samples)` indices in `[0, classes)`.
    """
    logits = jnp.asarray(unwrap(logits))
    if logits.ndim != 2:
        raise ValueError(f"categorical: `logits` must be 2-D (batch_size, num_classes), got "
                         f"shape {logits.shape}; add a batch axis with logits[None].")
    key = draw_key(seed)
    shape = (logits.shape[0], int(num_samples))
    return jax.random.categorical(key, logits[:, None, :], shape=shape).astype(
        dtypes.standardize(dtype))


def gamma(shape, alpha, dtype=None, seed=None):
    """Samples of Gamma(alpha, 1) (shape `alpha`, scale 1), shape `shape`."""
    key = draw_key(seed)
    return jax.random.gamma(key, jnp.asarray(unwrap(alpha)), tuple(shape), _dtype(dtype))


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Successes in `counts` trials of probability `probabilities` (broadcast
    against each other and `shape`), as floats of `dtype`."""
    key = draw_key(seed)
    return jax.random.binomial(key, jnp.asarray(unwrap(counts)),
                               jnp.asarray(unwrap(probabilities)), tuple(shape), _dtype(dtype))


def beta(shape, alpha, beta, dtype=None, seed=None):
    """Samples of Beta(alpha, beta) (broadcast against `shape`), in [0, 1]."""
    key = draw_key(seed)
    return jax.random.beta(key, jnp.asarray(unwrap(alpha)), jnp.asarray(unwrap(beta)),
                           tuple(shape), _dtype(dtype))


def shuffle(x, axis=0, seed=None):
    """`x` permuted along `axis`."""
    key = draw_key(seed)
    return jax.random.permutation(key, unwrap(x), axis=axis, independent=False)


def dropout(inputs, rate, noise_shape=None, seed=None):
    """Zeroes each entry with probability `rate` and scales the rest by 1/(1-rate)."""
    inputs = unwrap(inputs)
    if not 0 <= rate < 1:
        raise ValueError(f"dropout rate must be in [0, 1), got {rate}.")
    if rate == 0:
        return inputs
    key = draw_key(seed)
    shape = tuple(noise_shape) if noise_shape is not None else inputs.shape
    keep = jax.random.bernoulli(key, 1.0 - rate, shape)
    return jnp.where(keep, inputs / (1.0 - rate), jnp.zeros_like(inputs))


@export("loopax.utils.set_random_seed")
def set_random_seed(seed: int):
    """Seeds Python's `random`, NumPy and loopax's global generator.

    Afterwards unseeded initializers, dropout and `loopax.random` calls repeat from
    run to run.

    Args:
        seed: An int.

    Raises:
        TypeError: `seed` is not an int.
    """
    if not isinstance(seed, (int, np.integer)):
        raise TypeError(f"set_random_seed expects an int, got {seed!r}.")
    _py_random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)
    set_global_seed(int(seed))
