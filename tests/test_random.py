"""Seeded randomness: ints, SeedGenerators, the global generator."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import random
from loopax.src.state import StateScope


def test_int_seed_is_repeatable_and_matches_jax():
    a = random.normal((3,), seed=7)
    b = random.normal((3,), seed=7)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, jax.random.normal(jax.random.key(7), (3,)))


def test_seed_generator_advances_and_is_stateless_in_a_scope():
    gen = random.SeedGenerator(42)
    start = gen.state.numpy()
    x1 = random.uniform((4,), seed=gen)
    x2 = random.uniform((4,), seed=gen)
    assert not np.array_equal(x1, x2)
    # The same draws, replayed statelessly from the start state under jit.

    @jax.jit
    def draw(state):
        with StateScope([(gen.state, state)]) as scope:
            y = random.uniform((4,), seed=gen)
        return y, scope.get_current_value(gen.state)

    y1, s1 = draw(jnp.asarray(start))
    y2, _ = draw(s1)
    np.testing.assert_array_equal(y1, x1)
    np.testing.assert_array_equal(y2, x2)


def test_set_random_seed_makes_global_draws_reproducible():
    loopax.random.set_random_seed(3)
    a = random.normal((2,)), np.random.rand()
    loopax.random.set_random_seed(3)
    b = random.normal((2,)), np.random.rand()
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]


def test_dropout_keeps_expectation_and_rate():
    x = jnp.ones((20000,))
    y = random.dropout(x, 0.25, seed=1)
    kept = np.asarray(y) > 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(np.asarray(y)[kept], 1 / 0.75, rtol=1e-6)
    with pytest.raises(ValueError, match="rate"):
        random.dropout(x, 1.0, seed=1)


def test_truncated_normal_bounds_and_shuffle_is_permutation():
    t = np.asarray(random.truncated_normal((1000,), stddev=2.0, seed=0))
    assert np.all(np.abs(t) <= 4.0 + 1e-6)
    x = np.arange(10)
    s = np.asarray(random.shuffle(x, seed=0))
    assert sorted(s.tolist()) == list(range(10)) and s.tolist() != list(range(10))
    r = np.asarray(random.randint((100,), 0, 5, seed=0))
    assert r.min() >= 0 and r.max() < 5 and r.dtype == np.int32


def test_bad_seed_is_a_clear_error():
    with pytest.raises(TypeError, match="seed must be"):
        random.normal((2,), seed="abc")


def _split(state):
    key, sub = jax.random.split(jax.random.wrap_key_data(jnp.asarray(state, jnp.uint32)))
    return np.asarray(jax.random.key_data(key)), np.asarray(jax.random.key_data(sub))


@pytest.mark.parametrize("partitionable", [True, False], ids=["partitionable", "original"])
def test_seed_generator_hands_out_the_keys_of_jax_split(partitionable):
    """Eagerly, the next key is computed on the host (building a model compiles no
    split): it must be `jax.random.split`'s, whichever threefry JAX runs."""
    rng = np.random.default_rng(0)
    states = [np.array(s, np.uint32) for s in ([0, 0], [2**32 - 1, 2**32 - 1], [0, 42])]
    states += [rng.integers(0, 2**32, 2, dtype=np.uint64).astype(np.uint32) for _ in range(40)]
    gen = random.SeedGenerator(0)
    with jax.threefry_partitionable(partitionable):
        for state in states:
            gen.state.assign(state)
            key = gen.next()
            want_state, want_key = _split(state)
            np.testing.assert_array_equal(gen.state.numpy(), want_state)
            np.testing.assert_array_equal(np.asarray(jax.random.key_data(key)), want_key)


def test_only_traced_draws_run_the_compiled_split(monkeypatch):
    from loopax.src import random as random_module
    calls, split = [], random_module._advance
    monkeypatch.setattr(random_module, "_advance", lambda state: calls.append(1) or split(state))
    gen = random.SeedGenerator(5)
    eager = random.uniform((3,), seed=gen)
    assert calls == []

    @jax.jit
    def draw(state):
        with StateScope([(gen.state, state)]):
            return random.uniform((3,), seed=gen)

    gen2 = random.SeedGenerator(5)
    np.testing.assert_array_equal(draw(gen2.state.value), eager)
    assert calls == [1]
