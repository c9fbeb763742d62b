"""`tf.ragged.constant` and `tf.sparse.SparseTensor` on the host, as the tensor guide
uses them; TensorFlow 2.21's text where loopax matches it (its indices are int64,
loopax's int32 without x64)."""

from __future__ import annotations

import numpy as np
import pytest

import loopax.tf as tf


def test_ragged_constant_prints_and_indexes_as_tensorflow():
    rows = [[0, 1, 2, 3], [4, 5], [6, 7, 8], [9]]
    ragged = tf.ragged.constant(rows)
    assert str(ragged) == "<tf.RaggedTensor [[0, 1, 2, 3], [4, 5], [6, 7, 8], [9]]>"
    assert ragged.shape == (4, None) and str(ragged.shape) == "(4, None)"
    assert ragged.to_list() == rows
    assert ragged[1].numpy().tolist() == [4, 5]
    assert ragged.row_lengths().numpy().tolist() == [4, 2, 3, 1]
    np.testing.assert_array_equal(ragged.to_tensor().numpy()[3], [9, 0, 0, 0])
    assert tf.ragged.constant([["a", "bc"], ["d"]]).to_list() == [[b"a", b"bc"], [b"d"]]
    with pytest.raises(AttributeError, match="pad_sequences"):
        tf.ragged.map_flat_values


def test_sparse_tensor_to_dense_and_back_match_numpy():
    sp = tf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])
    dense = np.zeros((3, 4), np.int32)
    dense[0, 0], dense[1, 2] = 1, 2
    np.testing.assert_array_equal(tf.sparse.to_dense(sp).numpy(), dense)
    assert str(sp.values) == "tf.Tensor([1 2], shape=(2,), dtype=int32)"
    assert str(sp).startswith("SparseTensor(indices=tf.Tensor(\n[[0 0]\n [1 2]], shape=(2, 2)")
    back = tf.sparse.from_dense(dense)
    np.testing.assert_array_equal(back.indices.numpy(), [[0, 0], [1, 2]])
    np.testing.assert_array_equal(back.values.numpy(), [1, 2])
    with pytest.raises(AttributeError, match="pad_sequences"):
        tf.sparse.sparse_dense_matmul
