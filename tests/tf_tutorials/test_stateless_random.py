"""tf.random's stateless ops: TensorFlow's shapes, dtypes and ranges; the same
seed gives the same numbers (not TensorFlow's numbers: another generator)."""

import numpy as np
import pytest

import loopax.tf as tf


def test_split_and_fold_in_give_new_seeds_of_the_seeds_dtype():
    seeds = tf.random.split((1, 2), num=3)
    assert seeds.shape == (3, 2) and seeds.dtype == np.int32
    assert len({tuple(s) for s in seeds.numpy().tolist()}) == 3
    np.testing.assert_array_equal(seeds, tf.random.split(tf.constant([1, 2]), num=3))
    one = tf.random.split((1, 2), num=1)[0, :]
    assert one.shape == (2,)
    folded = tf.random.fold_in((1, 2), 7)
    assert folded.shape == (2,) and not np.array_equal(folded, tf.random.fold_in((1, 2), 8))


def test_stateless_samples():
    u = tf.random.stateless_uniform([2000], seed=(3, 4), minval=-2.0, maxval=3.0)
    assert u.dtype == np.float32 and -2 <= u.numpy().min() and u.numpy().max() < 3
    assert abs(float(np.mean(u)) - 0.5) < 0.15
    np.testing.assert_array_equal(u, tf.random.stateless_uniform([2000], (3, 4), -2.0, 3.0))
    ints = tf.random.stateless_uniform([500], (3, 4), minval=0, maxval=5, dtype=tf.int32)
    assert set(np.unique(ints.numpy()).tolist()) == {0, 1, 2, 3, 4}
    with pytest.raises(ValueError, match="maxval"):
        tf.random.stateless_uniform([3], (1, 1), dtype=tf.int32)
    n = tf.random.stateless_normal([4000], seed=(1, 1), mean=2.0, stddev=3.0).numpy()
    assert abs(n.mean() - 2) < 0.2 and abs(n.std() - 3) < 0.2
    t = tf.random.stateless_truncated_normal([4000], seed=(1, 1)).numpy()
    assert np.abs(t).max() <= 2.0
    with pytest.raises(ValueError, match="pair of ints"):
        tf.random.stateless_normal([2], seed=5)
