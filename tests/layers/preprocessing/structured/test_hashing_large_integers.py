"""Hashing keeps 64-bit integer inputs exact: the layer call used to convert
NumPy int64 to a JAX int32 array first, so ids above 2**31 were hashed
wrapped (silently wrong bins). Expected bins recorded once with Keras 3.15.1
on TensorFlow 2.21 (Keras's Hashing runs on TensorFlow ops):

    keras.layers.Hashing(1000)(np.array([2**40 + 5, 7, -3, 2**62 + 1]))
    -> [208, 88, 699, 343]
    keras.layers.Hashing(1000, mask_value=7)(np.array([2**40 + 5, 7])) -> [99, 0]
"""

import numpy as np

import loopax


def test_int64_ids_hash_to_tensorflows_bins():
    ids = np.array([2**40 + 5, 7, -3, 2**62 + 1])
    np.testing.assert_array_equal(loopax.layers.Hashing(1000)(ids), [208, 88, 699, 343])


def test_int64_ids_with_a_mask_value():
    ids = np.array([2**40 + 5, 7])
    np.testing.assert_array_equal(loopax.layers.Hashing(1000, mask_value=7)(ids), [99, 0])


def test_one_hot_of_a_large_id_is_the_one_hot_of_its_bin():
    one_hot = loopax.layers.Hashing(1000, output_mode="one_hot")(np.array([[2**40 + 5]]))
    np.testing.assert_array_equal(np.argmax(one_hot, axis=-1), [208])
