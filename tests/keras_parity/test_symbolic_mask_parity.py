"""A symbolic tensor's `_keras_mask` in a functional model, against Keras: which
outputs carry one (shape, dtype), and its values when the mask itself is a
model output."""

import numpy as np
import pytest
from keras_reference import keras

import loopax

TOKENS = np.array([[3, 1, 0, 0], [2, 0, 4, 0]], "int32")
FEATURES = np.array([[[0, 0], [1, 0], [0, 0]], [[2, 2], [0, 0], [0, 3]]], "float32")


def embedding(lib):
    inputs = lib.Input((None,), dtype="int32")
    return inputs, lib.layers.Embedding(6, 3, mask_zero=True)(inputs), TOKENS


def embedding_dense(lib):
    inputs, x, data = embedding(lib)
    return inputs, lib.layers.Dense(2)(x), data


def embedding_lstm_sequences(lib):
    inputs, x, data = embedding(lib)
    return inputs, lib.layers.LSTM(2, return_sequences=True)(x), data


def masking(lib):
    inputs = lib.Input((3, 2))
    return inputs, lib.layers.Masking()(inputs), FEATURES


def graph_with_mask_output(make, lib):
    inputs, output, data = make(lib)
    mask = output._keras_mask
    return mask, np.asarray(lib.Model(inputs, mask)(data))


@pytest.mark.parametrize("make", [embedding, embedding_dense, embedding_lstm_sequences,
                                  masking], ids=lambda f: f.__name__)
def test_symbolic_outputs_carry_the_mask_as_in_keras(make):
    ours_mask, ours = graph_with_mask_output(make, loopax)
    theirs_mask, theirs = graph_with_mask_output(make, keras)
    assert tuple(ours_mask.shape) == tuple(theirs_mask.shape)
    assert str(ours_mask.dtype) == str(theirs_mask.dtype) == "bool"
    np.testing.assert_array_equal(ours, theirs)


def test_a_layer_passing_the_mask_on_shares_it_and_one_ending_it_has_none():
    def masks(lib):
        inputs, x, _ = embedding(lib)
        dense = lib.layers.Dense(2)(x)
        last = lib.layers.LSTM(2)(x)
        return (dense._keras_mask is x._keras_mask, hasattr(last, "_keras_mask"),
                hasattr(inputs, "_keras_mask"))
    assert masks(loopax) == masks(keras) == (True, False, False)
