"""MultiHeadAttention against attention written out head by head in NumPy /
JAX from the layer's own projection weights."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from layer_checks import assert_trees_close, values

import loopax
from loopax import layers

rng = np.random.default_rng(4)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def reference_attention(p, query, value, mask=None, key_dim=2):
    """softmax(q kᵀ / sqrt(key_dim)) v per head, then the output projection."""
    wq, bq, wk, bk, wv, bv, wo, bo = p
    heads = wq.shape[1]
    out = 0
    for h in range(heads):
        q = query @ wq[:, h] + bq[h]
        k = value @ wk[:, h] + bk[h]
        v = value @ wv[:, h] + bv[h]
        scores = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(key_dim)
        if mask is not None:
            scores = jnp.where(mask, scores, -1e9)
        probs = jax.nn.softmax(scores, axis=-1)
        out = out + (probs @ v) @ wo[h]
    return out + bo


def make_layer(query, value, **kwargs):
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=2, bias_initializer="random_normal",
                                      **kwargs)
    layer(query, value)
    return layer


def test_mha_matches_reference_and_is_keras_shaped():
    q, v = randn(2, 3, 4), randn(2, 5, 6)
    layer = make_layer(q, v)
    assert [tuple(w.shape) for w in layer.weights] == [
        (4, 2, 2), (2, 2), (6, 2, 2), (2, 2), (6, 2, 2), (2, 2), (2, 2, 4), (4,)]
    assert layer.weights[0].path == f"{layer.name}/query/kernel"
    assert layer.weights[-1].path == f"{layer.name}/attention_output/bias"
    out, scores = layer(q, v, return_attention_scores=True)
    assert out.shape == (2, 3, 4) and scores.shape == (2, 2, 3, 5)
    np.testing.assert_allclose(np.asarray(scores).sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(out, reference_attention(values(layer.weights), q, v),
                               rtol=1e-4, atol=1e-5)
    stateless, _ = layer.stateless_call(values(layer.weights), [], q, v)
    np.testing.assert_allclose(stateless, out, rtol=1e-6, atol=1e-6)


def test_mha_gradients_match_reference():
    q, v = randn(2, 3, 4), randn(2, 4, 4)
    g = randn(2, 3, 4)
    layer = make_layer(q, v)

    def through_layer(tv, q, v):
        out, _ = layer.stateless_call(tv, [], q, v)
        return jnp.sum(out * g)

    def through_reference(p, q, v):
        return jnp.sum(reference_attention(p, q, v) * g)

    got = jax.jit(jax.grad(through_layer, argnums=(0, 1, 2)))(values(layer.weights), q, v)
    want = jax.jit(jax.grad(through_reference, argnums=(0, 1, 2)))(values(layer.weights), q, v)
    assert_trees_close(got, want, rtol=1e-4, atol=1e-4)


def test_mha_masks():
    x = randn(1, 4, 4)
    layer = make_layer(x, x)
    mask = np.array([[[1, 1, 0, 0]] * 4], bool)
    out, scores = layer(x, x, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(np.asarray(scores)[..., 2:], 0, atol=1e-7)
    np.testing.assert_allclose(out, reference_attention(values(layer.weights), x, x, mask),
                               rtol=1e-4, atol=1e-5)
    causal = np.tril(np.ones((4, 4), bool))[None]
    out_causal = layer(x, x, use_causal_mask=True)
    np.testing.assert_allclose(out_causal, reference_attention(values(layer.weights), x, x, causal),
                               rtol=1e-4, atol=1e-5)


def test_mha_dropout_follows_training():
    x = randn(2, 3, 4)
    layer = make_layer(x, x, dropout=0.5, seed=1)
    assert layer.non_trainable_variables == [layer.seed_generator.state]
    np.testing.assert_array_equal(layer(x, x), layer(x, x, training=False))
    assert not np.allclose(layer(x, x, training=True), layer(x, x))


def test_mha_symbolic_and_errors():
    q, v = loopax.Input(shape=(3, 4)), loopax.Input(shape=(7, 6))
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3, output_shape=5)
    assert layer(q, v).shape == (None, 3, 5)
    with pytest.raises(TypeError, match="value"):
        layers.MultiHeadAttention(2, 2)(randn(1, 3, 4))
    with pytest.raises(ValueError, match="rank >= 3"):
        layers.MultiHeadAttention(2, 2)(randn(3, 4), randn(3, 4))
