"""to_categorical, normalize, pad_sequences, set_random_seed."""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopax
from loopax.utils import normalize, pad_sequences, to_categorical


def test_to_categorical_known_values():
    np.testing.assert_array_equal(to_categorical([0, 2, 1]),
                                  [[1, 0, 0], [0, 0, 1], [0, 1, 0]])
    out = to_categorical(np.array([[1], [3]]), num_classes=5)
    assert out.shape == (2, 5) and out.dtype == np.float32 and out[1, 3] == 1
    np.testing.assert_array_equal(to_categorical(jnp.array([1, 0])), [[0, 1], [1, 0]])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=20))
def test_to_categorical_inverts_argmax(labels):
    out = to_categorical(labels, num_classes=10)
    np.testing.assert_array_equal(out.argmax(-1), labels)
    np.testing.assert_array_equal(out.sum(-1), 1)


def test_to_categorical_errors():
    with pytest.raises(ValueError, match="num_classes=3"):
        to_categorical([0, 3], num_classes=3)
    with pytest.raises(ValueError, match="negative"):
        to_categorical([-1, 0])
    with pytest.raises(ValueError, match="integer"):
        to_categorical([0.5])


def test_normalize():
    out = normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_allclose(normalize(np.array([[1.0, 3.0]]), order=1), [[0.25, 0.75]])


def test_pad_sequences():
    seqs = [[1, 2, 3], [4], []]
    np.testing.assert_array_equal(pad_sequences(seqs), [[1, 2, 3], [0, 0, 4], [0, 0, 0]])
    np.testing.assert_array_equal(pad_sequences(seqs, maxlen=2, padding="post", truncating="post"),
                                  [[1, 2], [4, 0], [0, 0]])
    np.testing.assert_array_equal(pad_sequences(seqs, maxlen=2), [[2, 3], [0, 4], [0, 0]])
    with pytest.raises(ValueError, match="padding"):
        pad_sequences(seqs, padding="middle")


def test_set_random_seed_is_reexported():
    loopax.utils.set_random_seed(3)
    a = loopax.random.normal((3,))
    loopax.utils.set_random_seed(3)
    np.testing.assert_array_equal(a, loopax.random.normal((3,)))
