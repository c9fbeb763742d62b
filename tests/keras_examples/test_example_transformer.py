"""Transformer blocks whose feed-forward part is a Sequential without an Input
(keras.io's "text classification with Transformer"), on sequences of a None
length: a token-and-position text classifier, and a time-series classifier
over variable-length series; each trained on two lengths and compared with
Keras."""

import numpy as np
from twins import assert_same_results, falls, run_twins


def transformer_block(keras):
    layers = keras.layers

    class TransformerBlock(layers.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, rate=0.0, **kwargs):
            super().__init__(**kwargs)
            self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"),
                                         layers.Dense(embed_dim)])
            self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
            self.dropout1 = layers.Dropout(rate)
            self.dropout2 = layers.Dropout(rate)

        def call(self, inputs):
            attn_output = self.att(inputs, inputs)
            attn_output = self.dropout1(attn_output)
            out1 = self.layernorm1(inputs + attn_output)
            ffn_output = self.ffn(out1)
            ffn_output = self.dropout2(ffn_output)
            return self.layernorm2(out1 + ffn_output)

    return TransformerBlock


def text_classifier_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops
    vocab_size, embed_dim = 20, 8

    class TokenAndPositionEmbedding(layers.Layer):
        def __init__(self, maxlen, vocab_size, embed_dim, **kwargs):
            super().__init__(**kwargs)
            self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

        def call(self, x):
            positions = ops.arange(start=0, stop=ops.shape(x)[-1], step=1)
            return self.token_emb(x) + self.pos_emb(positions)

    rng = np.random.default_rng(0)
    inputs = layers.Input(shape=(None,), dtype="int32")
    x = TokenAndPositionEmbedding(16, vocab_size, embed_dim)(inputs)
    x = transformer_block(keras)(embed_dim, 2, 16)(x)
    x = layers.GlobalAveragePooling1D()(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    model = same_weights(keras.Model(inputs=inputs, outputs=outputs))
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    results = {}
    for length in (6, 10):   # sequences of two lengths through the same model
        ids = rng.integers(1, vocab_size, (24, length)).astype("int32")
        labels = (ids[:, 0] < vocab_size // 2).astype("int32")
        history = model.fit(ids, labels, batch_size=8, epochs=3, shuffle=False, verbose=0)
        results[f"length {length}"] = {"history": history.history,
                                       "predictions": model.predict(ids[:3], verbose=0)}
    return results


def timeseries_classifier_script(keras, same_weights):
    layers = keras.layers
    rng = np.random.default_rng(1)
    inputs = keras.Input(shape=(None, 3))
    x = layers.Dense(8)(inputs)
    x = transformer_block(keras)(8, 2, 12)(x)
    x = transformer_block(keras)(8, 1, 12)(x)
    # GlobalAveragePooling1D: with GlobalMaxPooling1D here loopax's training gives NaN
    # losses when XLA:CPU compiles at --xla_backend_optimization_level=0 (the test
    # suite's setting, tests/conftest.py) and Keras's numbers at XLA's default level;
    # reported, not yet explained.
    x = layers.GlobalAveragePooling1D()(x)
    model = same_weights(keras.Model(inputs, layers.Dense(1, activation="sigmoid")(x)))
    model.compile(optimizer=keras.optimizers.RMSprop(0.005), loss="binary_crossentropy")
    results = {}
    for steps in (5, 12):
        series = rng.normal(size=(16, steps, 3)).astype("float32")
        labels = (series[:, :, 0].mean(axis=1) > 0).astype("float32")[:, None]
        history = model.fit(series, labels, batch_size=4, epochs=3, shuffle=False, verbose=0)
        results[f"steps {steps}"] = {"history": history.history,
                                     "evaluate": model.evaluate(series, labels, verbose=0)}
    return results


def test_text_classification_transformer_on_two_lengths_matches_keras():
    ours, theirs = run_twins(text_classifier_script)
    assert_same_results(ours, theirs, rtol=2e-4, atol=1e-5)
    assert falls(ours["length 6"]["history"])


def test_timeseries_transformer_on_variable_length_series_matches_keras():
    ours, theirs = run_twins(timeseries_classifier_script)
    assert_same_results(ours, theirs, rtol=2e-4, atol=1e-5)
    assert falls(ours["steps 5"]["history"])
