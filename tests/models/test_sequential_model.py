"""Sequential: with and without an Input, add/pop, build, config."""

import json

import numpy as np
import pytest

import loopax
from loopax.layers import BatchNormalization, Dense, InputLayer
from loopax.models import Sequential

X = np.random.default_rng(1).normal(size=(6, 4)).astype(np.float32)


def forward_np(layers, x):
    for layer in layers:
        x = x @ layer.kernel.numpy() + layer.bias.numpy()
        if layer.get_config().get("activation") == "relu":
            x = np.maximum(x, 0)
    return x


def test_with_input_is_built_and_matches_numpy():
    model = Sequential([loopax.Input(shape=(4,)), Dense(5, activation="relu"), Dense(2)],
                       name="seq")
    assert model.built and model.name == "seq"
    assert [type(l).__name__ for l in model.layers] == ["Dense", "Dense"]   # no InputLayer
    assert model.inputs[0].shape == (None, 4) and model.outputs[0].shape == (None, 2)
    np.testing.assert_allclose(model(X), forward_np(model.layers, X), rtol=1e-5, atol=1e-6)


def test_without_input_builds_on_first_call():
    model = Sequential([Dense(3), Dense(2)])
    assert not model.built and model.weights == []
    with pytest.raises(ValueError, match="no defined input"):
        model.inputs
    out = model(X)
    assert model.built and model.inputs[0].shape == (None, 4)
    assert [v.path for v in model.weights] == [   # Keras 3.15.1's paths
        "sequential/dense/kernel", "sequential/dense/bias",
        "sequential/dense_1/kernel", "sequential/dense_1/bias"]
    np.testing.assert_allclose(out, forward_np(model.layers, X), rtol=1e-5, atol=1e-6)
    assert model(X[:2]).shape == (2, 2)   # another batch size works


def test_input_shape_on_first_layer_and_build():
    model = Sequential([Dense(3, input_shape=(4,)), Dense(1)])
    assert model.built and model.inputs[0].shape == (None, 4)
    other = Sequential([Dense(3)])
    other.build((None, 4))
    assert other.built and [v.shape for v in other.weights] == [(4, 3), (3,)]


def test_add_and_pop():
    model = Sequential()
    model.add(loopax.Input(shape=(4,)))
    model.add(Dense(3, name="first"))
    model.add(Dense(2, name="second"))
    assert model(X).shape == (6, 2)
    popped = model.pop()
    assert popped.name == "second" and [l.name for l in model.layers] == ["first"]
    assert model(X).shape == (6, 3) and model.outputs[0].shape == (None, 3)
    model.pop()
    with pytest.raises(TypeError, match="no layers to pop"):
        model.pop()
    with pytest.raises(TypeError, match="Layer"):
        model.add("dense")
    with pytest.raises(ValueError, match="first layer"):
        Sequential([Dense(2), InputLayer(shape=(3,))])


def test_config_round_trip():
    model = Sequential([loopax.Input(shape=(4,)), Dense(3, activation="relu"),
                        BatchNormalization(), Dense(2)])
    clone = Sequential.from_config(json.loads(json.dumps(model.get_config())))
    assert [type(l).__name__ for l in clone.layers] == ["Dense", "BatchNormalization", "Dense"]
    clone.set_weights([w + 0.5 for w in model.get_weights()])
    model.set_weights([w + 0.5 for w in model.get_weights()])
    np.testing.assert_allclose(clone(X), model(X), rtol=1e-6)


def test_weight_order_is_kernel_then_bias_even_with_a_bias_regularizer():
    model = Sequential([loopax.Input(shape=(4,)), Dense(3, bias_regularizer="l2", name="reg")])
    assert [v.path for v in model.weights] == ["sequential/reg/kernel", "sequential/reg/bias"]


def _transformer_classifier(lib):
    """keras.io's text classification with a Transformer: the block's feed-forward
    part is a Sequential without an Input, built inside the block's call on a
    sequence of None length."""
    layers = lib.layers

    class TransformerBlock(layers.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, **kwargs):
            super().__init__(**kwargs)
            self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = lib.Sequential([layers.Dense(ff_dim, activation="relu"),
                                       layers.Dense(embed_dim)])
            self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)

        def call(self, inputs):
            out1 = self.layernorm1(inputs + self.att(inputs, inputs))
            return self.layernorm2(out1 + self.ffn(out1))

    inputs = layers.Input(shape=(None,), dtype="int32")
    x = TransformerBlock(8, 2, 16)(layers.Embedding(20, 8)(inputs))
    return lib.Model(inputs, layers.Dense(2)(layers.GlobalAveragePooling1D()(x)))


def test_sequential_without_input_in_a_custom_layer_on_a_none_length_matches_keras():
    keras = pytest.importorskip("keras")
    k_model, l_model = _transformer_classifier(keras), _transformer_classifier(loopax)
    assert [w.shape for w in l_model.weights] == [tuple(w.shape) for w in k_model.weights]
    l_model.set_weights(k_model.get_weights())
    rng = np.random.default_rng(0)
    for length in (5, 9):   # sizes other than the probes' and than each other
        ids = rng.integers(0, 20, (3, length)).astype("int32")
        np.testing.assert_allclose(np.asarray(l_model(ids)), np.asarray(k_model(ids)),
                                   rtol=1e-5, atol=1e-5)


def test_sequential_built_from_a_batch_runs_on_other_sizes_as_keras():
    keras = pytest.importorskip("keras")
    x5 = np.random.default_rng(1).normal(size=(2, 5, 3)).astype("float32")
    x7 = np.random.default_rng(2).normal(size=(2, 7, 3)).astype("float32")
    k_model = keras.Sequential([keras.layers.Dense(4)])
    l_model = Sequential([Dense(4)])
    k_model(x5)
    l_model(x5)
    l_model.set_weights(k_model.get_weights())
    np.testing.assert_allclose(np.asarray(l_model(x7)), np.asarray(k_model(x7)), rtol=1e-6)
    assert l_model.inputs[0].shape == (None, None, 3)
    np.testing.assert_allclose(np.asarray(l_model(x5)), np.asarray(k_model(x5)), rtol=1e-6)
