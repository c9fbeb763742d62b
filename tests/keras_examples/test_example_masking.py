"""Custom layers that consume a mask in functional models, as in keras.io's
"understanding masking and padding" guide: the guide's TemporalSoftmax after
Embedding(mask_zero=True) and Dense, and a masked mean pooling over an LSTM's
sequence output; each trained and compared with Keras."""

import numpy as np
from twins import assert_same_results, falls, run_twins


def padded_sequences(rng, n=32, steps=8, vocab=12):
    """Token ids padded with 0 after a random length; the label is whether the
    sequence holds token 1."""
    ids = rng.integers(2, vocab, (n, steps))
    lengths = rng.integers(2, steps + 1, n)
    has_one = rng.random(n) < 0.5
    ids[has_one, 0] = 1
    ids[np.arange(steps)[None, :] >= lengths[:, None]] = 0
    return ids.astype("int32"), has_one.astype("float32")[:, None]


def temporal_softmax_script(keras, same_weights):
    ops = keras.ops

    class TemporalSoftmax(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            assert mask is not None
            broadcast_float_mask = ops.expand_dims(ops.cast(mask, "float32"), -1)
            inputs_exp = ops.exp(inputs) * broadcast_float_mask
            inputs_sum = ops.sum(inputs_exp * broadcast_float_mask, axis=1, keepdims=True)
            return inputs_exp / inputs_sum

    ids, labels = padded_sequences(np.random.default_rng(0))
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(input_dim=12, output_dim=8, mask_zero=True)(inputs)
    x = keras.layers.Dense(1)(x)
    attention = TemporalSoftmax()(x)
    # The attention over the real timesteps weighs the embeddings' scores.
    scores = keras.layers.Dense(1)(keras.layers.Embedding(12, 4)(inputs))
    pooled = keras.layers.Lambda(lambda t: ops.sum(t[0] * t[1], axis=1),
                                 output_shape=(1,))([attention, scores])
    model = same_weights(keras.Model(inputs, keras.layers.Activation("sigmoid")(pooled)))
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss="binary_crossentropy")
    history = model.fit(ids, labels, batch_size=8, epochs=4, shuffle=False, verbose=0)
    attention_model = keras.Model(inputs, attention)
    return {"history": history.history,
            "attention": attention_model.predict(ids[:4], verbose=0)[..., 0],
            "predictions": model.predict(ids[:6], verbose=0)}


def masked_mean_script(keras, same_weights):
    ops = keras.ops

    class MaskedMean(keras.layers.Layer):
        """The mean over the timesteps the mask keeps."""

        def call(self, inputs, mask=None):
            weights = ops.expand_dims(ops.cast(mask, inputs.dtype), -1)
            return ops.sum(inputs * weights, axis=1) / ops.maximum(
                ops.sum(weights, axis=1), 1.0)

        def compute_mask(self, inputs, mask=None):
            return None

    ids, labels = padded_sequences(np.random.default_rng(1))
    inputs = keras.Input(shape=(8,), dtype="int32")
    x = keras.layers.Embedding(12, 8, mask_zero=True)(inputs)
    x = keras.layers.LSTM(8, return_sequences=True)(x)
    x = MaskedMean()(x)
    model = same_weights(keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x)))
    model.compile(optimizer=keras.optimizers.RMSprop(0.01), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(ids, labels, batch_size=8, epochs=4, shuffle=False, verbose=0)
    # Padding does not change the pooled result: the same ids with more padding.
    longer = np.concatenate([ids, np.zeros_like(ids)], axis=1)[:, :8]
    return {"history": history.history,
            "evaluate": model.evaluate(ids, labels, verbose=0),
            "predictions": model.predict(longer[:6], verbose=0)}


def test_temporal_softmax_from_the_masking_guide_matches_keras():
    ours, theirs = run_twins(temporal_softmax_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])


def test_masked_mean_pooling_over_an_lstm_matches_keras():
    ours, theirs = run_twins(masked_mean_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
