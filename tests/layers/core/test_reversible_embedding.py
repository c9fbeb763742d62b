"""ReversibleEmbedding against Keras 3.15.1 itself: the same weights give the
same embeddings and reverse logits, masks, fit() steps, and a Keras `.keras`
file loads into loopax with the same outputs."""



import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

TOKENS = np.array([[1, 2, 0, 7], [3, 4, 5, 0]])
CASES = {
    "tied": {},
    "untied": {"tie_weights": False},
    "soft_cap": {"logit_soft_cap": 0.5},
    "untied_soft_cap_float16": {"tie_weights": False, "logit_soft_cap": 2.0,
                                "reverse_dtype": "float16"},
}


def twins(kwargs):
    """A Keras and a loopax layer built on TOKENS, holding Keras's random weights."""
    k_layer = keras.layers.ReversibleEmbedding(9, 6, embeddings_initializer="random_normal",
                                               **kwargs)
    l_layer = loopax.layers.ReversibleEmbedding(9, 6, **kwargs)
    k_layer(TOKENS)
    l_layer(TOKENS)
    l_layer.set_weights(k_layer.get_weights())
    return k_layer, l_layer


@pytest.mark.parametrize("kwargs", CASES.values(), ids=CASES.keys())
def test_embedding_and_reverse_logits_match_keras(kwargs):
    k_layer, l_layer = twins(kwargs)
    assert [w.path for w in l_layer.weights] == [w.path for w in k_layer.weights]
    np.testing.assert_allclose(np.asarray(l_layer(TOKENS)), np.asarray(k_layer(TOKENS)),
                               rtol=1e-6)
    hidden = np.random.default_rng(0).normal(size=(2, 4, 6)).astype("float32")
    want = np.asarray(k_layer(hidden, reverse=True))
    got = np.asarray(l_layer(hidden, reverse=True))
    assert got.shape == want.shape == (2, 4, 9)
    assert got.dtype == want.dtype
    tol = 1e-3 if kwargs.get("reverse_dtype") == "float16" else 1e-5
    np.testing.assert_allclose(got.astype("float32"), want.astype("float32"), rtol=tol, atol=tol)


def masked_pooling_model(lib):
    """Pools the embeddings (masked at token 0) and the reverse logits (unmasked)."""
    tokens = lib.Input((4,), dtype="int32")
    layer = lib.layers.ReversibleEmbedding(9, 6, mask_zero=True, name="emb")
    embedded = layer(tokens)
    logits = layer(embedded, reverse=True)
    pool = lib.layers.GlobalAveragePooling1D()
    return lib.Model(tokens, [pool(embedded), pool(logits)])


def test_mask_only_on_the_forward_call_as_keras():
    k_model = masked_pooling_model(keras)
    l_model = masked_pooling_model(loopax)
    l_model.set_weights(k_model.get_weights())
    for got, want in zip(l_model(TOKENS), k_model(TOKENS)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_config_round_trip_has_keras_keys():
    layer = loopax.layers.ReversibleEmbedding(9, 6, tie_weights=False, reverse_dtype="float32",
                                              logit_soft_cap=3.0, name="rev")
    config = layer.get_config()
    k_config = keras.layers.ReversibleEmbedding(9, 6).get_config()
    assert set(k_config) - set(config) <= {"quantization_config"}
    rebuilt = loopax.layers.ReversibleEmbedding.from_config(config)
    assert rebuilt.get_config() == config


def language_model(lib, weights=None):
    """tokens -> embeddings -> Dense -> tied reverse projection to logits."""
    tokens = lib.Input((4,), dtype="int32")
    embedding = lib.layers.ReversibleEmbedding(9, 6, tie_weights=False, logit_soft_cap=4.0,
                                               name="emb")
    hidden = lib.layers.Dense(6, activation="tanh", name="mix")(embedding(tokens))
    model = lib.Model(tokens, embedding(hidden, reverse=True))
    if weights is not None:
        model.set_weights(weights)
    return model


def test_fit_matches_keras():
    keras.utils.set_random_seed(1)
    k_model = language_model(keras)
    l_model = language_model(loopax, k_model.get_weights())
    tokens = np.random.default_rng(1).integers(0, 9, size=(16, 4))
    targets = np.roll(tokens, -1, axis=1)
    histories = []
    for lib, model in ((keras, k_model), (loopax, l_model)):
        model.compile(lib.optimizers.SGD(0.5),
                      lib.losses.SparseCategoricalCrossentropy(from_logits=True))
        histories.append(model.fit(tokens, targets, batch_size=8, epochs=3, shuffle=False,
                                   verbose=0).history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-5)
    assert histories[0][-1] < histories[0][0]
    for got, want in zip(l_model.get_weights(), k_model.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_keras_file_loads_and_loopax_file_round_trips(tmp_path):
    keras.utils.set_random_seed(2)
    k_model = language_model(keras)
    path = str(tmp_path / "lm.keras")
    k_model.save(path)
    l_model = loopax.saving.load_model(path)
    tokens = np.random.default_rng(2).integers(0, 9, size=(3, 4))
    want = np.asarray(k_model(tokens))
    np.testing.assert_allclose(np.asarray(l_model(tokens)), want, rtol=1e-5, atol=1e-6)
    own = str(tmp_path / "lm_loopax.keras")
    l_model.save(own)
    np.testing.assert_allclose(np.asarray(loopax.saving.load_model(own)(tokens)), want,
                               rtol=1e-5, atol=1e-6)
