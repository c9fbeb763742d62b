"""keras.random.beta / binomial / categorical / gamma in loopax: the same shapes
and dtypes as Keras 3.15.1 and, for a fixed seed, sample moments that agree
with Keras's samples and with the closed-form moments (exact values differ:
Keras and loopax turn an int seed into different keys)."""

import jax
import numpy as np
import pytest
from keras_reference import keras

import loopax

N = 20_000
LOGITS = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], "float32"))
CASES = {
    # name: (kwargs, closed-form mean, closed-form variance)
    "gamma-alpha=2.5": ("gamma", {"alpha": 2.5}, 2.5, 2.5),
    "gamma-alpha=0.5": ("gamma", {"alpha": 0.5}, 0.5, 0.5),
    "binomial-n=10-p=0.3": ("binomial", {"counts": 10, "probabilities": 0.3}, 3.0, 2.1),
    "beta-a=2-b=5": ("beta", {"alpha": 2.0, "beta": 5.0}, 2 / 7, 10 / (49 * 8)),
    "beta-a=0.5-b=0.5": ("beta", {"alpha": 0.5, "beta": 0.5}, 0.5, 0.125),
}


def draw(module, name, kwargs, shape=(N,), seed=7, dtype=None):
    return np.asarray(getattr(module.random, name)(shape, **kwargs, dtype=dtype, seed=seed))


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_moments_match_keras_and_closed_form(case):
    name, kwargs, mean, variance = CASES[case]
    ours, theirs = draw(loopax, name, kwargs), draw(keras, name, kwargs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype == np.float32
    standard_error = np.sqrt(variance / N)
    for sample in (ours, theirs):
        assert abs(sample.mean() - mean) < 5 * standard_error
        assert abs(sample.var() - variance) < 0.05 * variance
    assert abs(ours.mean() - theirs.mean()) < 7 * standard_error


def test_parameters_broadcast_against_the_shape_as_keras():
    kwargs = {"counts": np.array([5.0, 50.0]), "probabilities": np.array([[0.1], [0.9]])}
    ours, theirs = draw(loopax, "binomial", kwargs, (2, 2)), draw(keras, "binomial", kwargs, (2, 2))
    assert ours.shape == theirs.shape == (2, 2)
    big = draw(loopax, "binomial", kwargs, (4000, 2, 2)).mean(0)
    np.testing.assert_allclose(big, [[0.5, 5.0], [4.5, 45.0]], rtol=0.05)
    alphas = draw(loopax, "gamma", {"alpha": np.array([1.0, 4.0])}, (N, 2)).mean(0)
    np.testing.assert_allclose(alphas, [1.0, 4.0], rtol=0.05)


def test_categorical_frequencies_match_softmax_and_keras():
    ours = np.asarray(loopax.random.categorical(LOGITS, N, seed=3))
    theirs = np.asarray(keras.random.categorical(LOGITS, N, seed=3))
    assert ours.shape == theirs.shape == (2, N) and ours.dtype == theirs.dtype == np.int32
    expected = np.exp(LOGITS)
    for sample in (ours, theirs):
        frequencies = np.stack([np.bincount(row, minlength=3) / N for row in sample])
        np.testing.assert_allclose(frequencies, expected, atol=0.015)
    assert np.asarray(loopax.random.categorical(LOGITS, 4, dtype="int16")).dtype == \
        np.asarray(keras.random.categorical(LOGITS, 4, dtype="int16")).dtype


def test_categorical_needs_2d_logits_as_keras():
    with pytest.raises(ValueError, match=r"2-D.*\(3,\)"):
        loopax.random.categorical(LOGITS[0], 2, seed=1)
    with pytest.raises(ValueError):
        keras.random.categorical(LOGITS[0], 2, seed=1)


@pytest.mark.parametrize("name", ["gamma", "binomial", "beta", "categorical"])
def test_seeded_like_the_other_random_functions(name):
    kwargs = {"gamma": {"alpha": 1.5}, "binomial": {"counts": 4, "probabilities": 0.5},
              "beta": {"alpha": 2.0, "beta": 2.0}}.get(name)
    fn = ((lambda seed: loopax.random.categorical(LOGITS, 8, seed=seed)) if name == "categorical"
          else (lambda seed: getattr(loopax.random, name)((64,), **kwargs, seed=seed)))
    np.testing.assert_array_equal(fn(11), fn(11))
    generator = loopax.random.SeedGenerator(5)
    first, second = fn(generator), fn(generator)
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, fn(loopax.random.SeedGenerator(5)))
    compiled = jax.jit(lambda key: fn(key))
    np.testing.assert_allclose(compiled(jax.random.key(2)), fn(jax.random.key(2)), rtol=1e-6)
