"""Masks end to end against Keras: Masking, Embedding(mask_zero=True), the
mask carried through functional, Sequential and subclassed models (under
jit too), and a masked LSTM text classifier trained with fit()."""



import jax
import numpy as np
import pytest

import loopax
from loopax import layers

keras = pytest.importorskip("keras")


def _padded_ids(n=16, steps=6, vocab=20, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(n, steps))
    lengths = rng.integers(1, steps + 1, size=n)
    ids[np.arange(steps)[None, :] >= lengths[:, None]] = 0
    return ids.astype("int32"), lengths


def test_masking_layer_matches_keras():
    x = np.random.default_rng(0).normal(size=(2, 4, 3)).astype("float32")
    x[0, 2:] = 0.0
    k, lx = keras.layers.Masking(0.0), layers.Masking(0.0)
    np.testing.assert_allclose(np.asarray(lx(x)), np.asarray(k(x)))
    np.testing.assert_array_equal(np.asarray(lx.compute_mask(x)),
                                  np.asarray(k.compute_mask(x)))
    np.testing.assert_array_equal(np.asarray(lx(x)._keras_mask), [[1, 1, 0, 0], [1, 1, 1, 1]])


def test_embedding_mask_zero_attaches_the_mask():
    ids, _ = _padded_ids()
    out = layers.Embedding(20, 3, mask_zero=True)(ids)
    np.testing.assert_array_equal(np.asarray(out._keras_mask), ids != 0)


def test_masked_timesteps_do_not_change_the_output():
    x = np.random.default_rng(1).normal(size=(3, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)
    lstm = layers.LSTM(4)
    noisy = np.where(mask[..., None], x, 100.0).astype("float32")
    np.testing.assert_allclose(np.asarray(lstm(x, mask=mask)), np.asarray(lstm(noisy, mask=mask)),
                               rtol=1e-6)
    assert not np.allclose(np.asarray(lstm(x)), np.asarray(lstm(noisy)))


def _classifier(lib):
    return lib.Sequential([lib.Input((6,), dtype="int32"),
                           lib.layers.Embedding(20, 8, mask_zero=True),
                           lib.layers.Dense(8),          # passes the mask on
                           lib.layers.LSTM(8),
                           lib.layers.Dense(1, activation="sigmoid")])


def test_mask_flows_through_functional_sequential_and_subclassed_models():
    ids, _ = _padded_ids()
    k_model, l_model = _classifier(keras), _classifier(loopax)
    l_model.set_weights(k_model.get_weights())
    want = np.asarray(k_model(ids))
    np.testing.assert_allclose(np.asarray(l_model(ids)), want, rtol=1e-5, atol=1e-6)

    class Subclassed(loopax.Model):
        def __init__(self):
            super().__init__()
            self.embed = layers.Embedding(20, 8, mask_zero=True)
            self.dense = layers.Dense(8)
            self.lstm = layers.LSTM(8)
            self.out = layers.Dense(1, activation="sigmoid")

        def call(self, x):
            return self.out(self.lstm(self.dense(self.embed(x))))
    sub = Subclassed()
    sub(ids)
    sub.set_weights(k_model.get_weights())
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: sub(x))(ids)), want,
                               rtol=1e-5, atol=1e-6)


def test_text_classifier_trains_with_fit_and_matches_keras():
    ids, lengths = _padded_ids(n=64, seed=3)
    y = (lengths > 3).astype("float32")[:, None]     # learnable only through the mask
    k_model, l_model = _classifier(keras), _classifier(loopax)
    l_model.set_weights(k_model.get_weights())
    l_model.compile(optimizer=loopax.optimizers.Adam(0.01), loss="binary_crossentropy")
    history = l_model.fit(ids, y, epochs=10, batch_size=16, verbose=0).history["loss"]
    assert history[-1] < 0.8 * history[0]
    k_model.set_weights(l_model.get_weights())
    np.testing.assert_allclose(np.asarray(l_model.predict(ids, verbose=0)),
                               np.asarray(k_model.predict(ids, verbose=0)), rtol=1e-5, atol=1e-6)


def _temporal_softmax_model(lib):
    """The masking guide's TemporalSoftmax: a custom layer whose `call` needs
    the mask that Embedding(mask_zero=True) made and Dense passed on."""
    ops = lib.ops

    class TemporalSoftmax(lib.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            assert mask is not None, "the mask did not reach call"
            float_mask = ops.expand_dims(ops.cast(mask, "float32"), -1)
            inputs_exp = ops.exp(inputs) * float_mask
            return inputs_exp / ops.sum(inputs_exp, axis=1, keepdims=True)

    inputs = lib.Input(shape=(None,), dtype="int32")
    x = lib.layers.Embedding(input_dim=20, output_dim=4, mask_zero=True)(inputs)
    x = lib.layers.Dense(1)(x)
    return lib.Model(inputs, TemporalSoftmax()(x))


def test_mask_reaches_a_custom_layer_call_in_a_functional_model():
    ids, _ = _padded_ids()
    k_model, l_model = _temporal_softmax_model(keras), _temporal_softmax_model(loopax)
    l_model.set_weights(k_model.get_weights())
    want = np.asarray(k_model(ids))
    np.testing.assert_allclose(np.asarray(l_model(ids)), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(l_model.predict(ids, verbose=0)), want,
                               rtol=1e-5, atol=1e-7)
    assert np.all(want[ids == 0] == 0)  # padding gets no probability
