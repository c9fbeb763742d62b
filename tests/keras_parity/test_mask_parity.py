"""Masks consumed as Keras consumes them: by Attention / AdditiveAttention /
MultiHeadAttention (query, value and key masks, use_causal_mask), by
GlobalAveragePooling1D (GlobalMaxPooling1D ignores them, as Keras), and by
losses and metrics in compile()/evaluate()/fit() (padding does not count)."""

import numpy as np
import pytest
from keras_reference import keras

import loopax

RNG = np.random.default_rng(0)
Q = RNG.normal(size=(2, 5, 4)).astype(np.float32)
V = RNG.normal(size=(2, 6, 4)).astype(np.float32)
K = RNG.normal(size=(2, 6, 4)).astype(np.float32)
Q_MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
V_MASK = np.array([[1, 1, 1, 1, 0, 0], [1, 0, 1, 1, 1, 1]], bool)


@pytest.mark.parametrize("name, kwargs", [
    ("Attention", {}),
    ("Attention", {"use_scale": True, "score_mode": "concat"}),
    ("AdditiveAttention", {}),
    ("AdditiveAttention", {"use_scale": False}),
], ids=["Attention", "Attention-scaled-concat", "AdditiveAttention",
        "AdditiveAttention-unscaled"])
@pytest.mark.parametrize("causal", [False, True], ids=["no_causal_mask", "causal_mask"])
@pytest.mark.parametrize("with_key", [False, True], ids=["value_as_key", "with_key"])
def test_dot_attention_layers_match_keras(name, kwargs, causal, with_key):
    inputs = [Q, V, K] if with_key else [Q, V]
    theirs = getattr(keras.layers, name)(**kwargs)
    ours = getattr(loopax.layers, name)(**kwargs)
    theirs(inputs)
    ours(inputs)
    weights = [np.asarray(w) + 0.3 for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    for mask in (None, [Q_MASK, V_MASK]):
        k_out, k_scores = theirs(inputs, mask=mask, return_attention_scores=True,
                                 use_causal_mask=causal)
        out, scores = ours(inputs, mask=mask, return_attention_scores=True,
                           use_causal_mask=causal)
        np.testing.assert_allclose(out, k_out, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(scores, k_scores, rtol=1e-5, atol=1e-6)
    assert np.all(np.asarray(out)[0, 3:] == 0)             # masked query steps
    assert np.all(np.asarray(scores)[0, :, 4:] < 1e-6)     # masked value steps
    skip = ("dtype", "name")
    assert {k: v for k, v in ours.get_config().items() if k not in skip} == \
        {k: v for k, v in theirs.get_config().items() if k not in skip}


def test_dot_attention_gradients_match_keras():
    import jax
    theirs, ours = keras.layers.AdditiveAttention(), loopax.layers.AdditiveAttention()
    theirs([Q, V])
    ours([Q, V])
    ours.set_weights(theirs.get_weights())

    def loss(layer, lib):
        def f(q, v):
            return lib.ops.sum(layer([q, v], mask=[Q_MASK, V_MASK]) ** 2)
        return jax.grad(f, argnums=(0, 1))(Q, V)
    for a, b in zip(loss(ours, loopax), loss(theirs, keras)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dot_attention_input_errors():
    with pytest.raises(ValueError, match=r"\[query, value\]"):
        loopax.layers.Attention()(Q)
    with pytest.raises(ValueError, match="score_mode"):
        loopax.layers.Attention(score_mode="cosine")


def embedded(lib, body, tokens=(6,)):
    lib.utils.set_random_seed(0)
    ids = lib.Input(tokens, dtype="int32")
    return lib.Model(ids, body(lib, lib.layers.Embedding(12, 4, mask_zero=True)(ids)))


TOKENS = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6], [7, 0, 0, 0, 0, 0]])


def mha_self(lib, x):
    return lib.layers.MultiHeadAttention(2, 3)(x, x)


def mha_causal(lib, x):
    return lib.layers.MultiHeadAttention(2, 3)(x, x, use_causal_mask=True)


def mha_key(lib, x):
    key = lib.layers.Masking(0.0)(lib.layers.Dense(4, kernel_initializer="ones")(x))
    value = lib.layers.Dense(4)(x)
    return lib.layers.MultiHeadAttention(2, 3)(x, value, key)


def gap(lib, x):
    return lib.layers.GlobalAveragePooling1D()(x)


def gap_first(lib, x):
    return lib.layers.GlobalAveragePooling1D(data_format="channels_first", keepdims=True)(
        lib.layers.Permute((2, 1))(x))


def gmp(lib, x):
    return lib.layers.GlobalMaxPooling1D()(x)


def mha_pooled(lib, x):
    return gap(lib, mha_causal(lib, x))


@pytest.mark.parametrize("body", [mha_self, mha_causal, mha_key, gap, gap_first, gmp,
                                  mha_pooled])
def test_masks_reach_attention_and_pooling_as_in_keras(body):
    theirs, ours = embedded(keras, body), embedded(loopax, body)
    weights = [np.random.default_rng(i).normal(size=w.shape).astype("float32")
               for i, w in enumerate(theirs.get_weights())]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    expected = np.asarray(theirs.predict(TOKENS, verbose=0))
    np.testing.assert_allclose(ours.predict(TOKENS, verbose=0), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours(TOKENS), expected, rtol=1e-5, atol=1e-6)
    if body is not gmp:   # the mask changes the result (GlobalMaxPooling1D ignores it)
        unmasked = np.asarray(theirs(np.where(TOKENS == 0, 11, TOKENS)))
        assert not np.allclose(expected[0], unmasked[0], atol=1e-4)


def tagger(lib, units, activation=None):
    ids = lib.Input((6,), dtype="int32")
    h = lib.layers.Embedding(10, 4, mask_zero=True)(ids)
    return lib.Model(ids, lib.layers.Dense(units, activation=activation)(h))


def weights_for(model):
    return [np.linspace(-1, 1, w.size).reshape(w.shape).astype("float32")
            for w in model.get_weights()]


@pytest.mark.parametrize("steps_per_execution", [1, 2])
def test_losses_and_metrics_skip_masked_timesteps_as_in_keras(steps_per_execution):
    rng = np.random.default_rng(3)
    ids = rng.integers(1, 9, size=(8, 6))
    ids[:, 4:] = 0
    ids[0, 2:] = 0
    y = rng.normal(size=(8, 6, 2)).astype(np.float32)
    labels = rng.integers(0, 3, size=(8, 6))
    results = {}
    for lib in (keras, loopax):
        model = tagger(lib, 2)
        model.set_weights(weights_for(model))
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=steps_per_execution,
                      metrics=["mae", lib.metrics.MeanSquaredError(name="mse2")])
        evaluated = model.evaluate(ids, y, verbose=0, return_dict=True)
        history = model.fit(ids, y, epochs=2, batch_size=4, shuffle=False, verbose=0).history
        classifier = tagger(lib, 3, "softmax")
        classifier.set_weights(weights_for(classifier))
        classifier.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                           metrics=["accuracy"])
        accuracy = classifier.evaluate(ids, labels, verbose=0, return_dict=True)
        results[lib.__name__] = evaluated, history, accuracy, model.get_weights()
    ours, theirs = results["loopax"], results["keras"]
    for a, b in zip(ours[:3], theirs[:3]):
        assert a.keys() == b.keys()
        for key in b:
            np.testing.assert_allclose(a[key], b[key], rtol=1e-5)
    for a, b in zip(ours[3], theirs[3]):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6)
    # An independent check: the masked mean over the real timesteps only.
    real = ids != 0
    pred = np.asarray(tagger_prediction(ids))
    assert np.isclose(theirs[0]["mse2"], ((pred - y) ** 2).mean(-1)[real].mean(), rtol=1e-5)


def tagger_prediction(ids):
    model = tagger(loopax, 2)
    model.set_weights(weights_for(model))
    return model(ids)


def test_a_loss_called_directly_reads_the_mask_of_y_pred():
    y_pred = loopax.layers.Masking(0.0)(np.array([[[1.0], [2.0], [0.0]]], np.float32))
    y_true = np.array([[[0.0], [0.0], [5.0]]], np.float32)
    mse = loopax.losses.MeanSquaredError()
    np.testing.assert_allclose(mse(y_true, y_pred), (1 + 4) / 2, rtol=1e-6)
    keras_pred = keras.layers.Masking(0.0)(np.array([[[1.0], [2.0], [0.0]]], np.float32))
    np.testing.assert_allclose(keras.losses.MeanSquaredError()(y_true, keras_pred), 2.5)
