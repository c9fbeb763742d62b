"""GroupQueryAttention against Keras 3.15's (outputs, attention scores and
gradients with Keras's weights copied in; attention masks, causal and
sliding-window masks, masks carried by the inputs), config and saving round
trips, and its errors."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "keras_parity"))
# keras_reference skips this module without Keras.
from keras_reference import assert_close, build_pair, evaluate_pair, keras

import loopax
from loopax import layers
from loopax.src.layers.masking import get_keras_mask

rng = np.random.default_rng(5)


def normal(*shape):
    return rng.standard_normal(shape).astype("float32")


Q, V, K = normal(2, 5, 4), normal(2, 6, 4), normal(2, 6, 3)
HEADS = {"head_dim": 3, "num_query_heads": 4, "num_key_value_heads": 2}
ZEROS = {"kernel_initializer": "zeros"}   # where the values do not matter: no sampler compiles
# Query 1 of the first sequence may attend to nothing (Keras averages the values
# for it, or gives it zero weights with dropout or returned scores: both checked
# below); the second sequence sees 4 keys.
MASK = np.ones((2, 5, 6), bool)
MASK[0, 1] = False
MASK[1, :, 4:] = False

CASES = [
    pytest.param(HEADS, (Q, V), {"attention_mask": MASK}, id="grouped-attention_mask"),
    pytest.param(HEADS, (Q, V), {"attention_mask": MASK, "return_attention_scores": True},
                 id="grouped-attention_mask-scores"),
    pytest.param({**HEADS, "num_key_value_heads": 1, "use_bias": False}, (Q[:1], V[:1], K[:1]),
                 {}, id="multi_query-key-no_bias-batch_of_1"),
    pytest.param({**HEADS, "use_gate": True, "sliding_window": 2}, (Q, Q),
                 {"use_causal_mask": True, "attention_mask": MASK[0, :, :5]},
                 id="gate-causal-sliding_window-2d_mask"),
    pytest.param({**HEADS, "num_key_value_heads": 4, "dropout": 0.3}, (Q, V),
                 {"query_mask": MASK[:, :, 0], "value_mask": MASK[:, 0]},
                 id="multi_head-query_and_value_masks-dropout_at_inference"),
]


@pytest.mark.parametrize("kwargs, args, call", CASES)
def test_outputs_and_gradients_match_keras(kwargs, args, call):
    pair = build_pair("GroupQueryAttention", kwargs, args, call)  # weight names and shapes
    (k_out, _, k_grads), (l_out, _, l_grads) = evaluate_pair(pair, args, call)
    assert_close(l_out, k_out, 1e-5, 1e-5, "output (and scores)")
    assert_close(l_grads, k_grads, 1e-5, 1e-5, "gradients (weights, inputs)")


TOKENS = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6], [7, 0, 0, 0, 0, 0]])


def test_masks_of_the_inputs_are_used_as_in_keras():
    """Query and value masks from an Embedding(mask_zero=True), the key's
    from a Masking layer (token 2 zeroed), reach the layer as in Keras."""
    table = normal(12, 4)
    weights, outputs = None, []
    for lib in (keras, loopax):
        embedding = lib.layers.Embedding(12, 4, mask_zero=True)
        embedding.build((None, 6))
        embedding.set_weights([table])
        x = embedding(TOKENS)
        key = lib.layers.Masking(0.0)(x * (TOKENS[..., None] != 2))
        layer = lib.layers.GroupQueryAttention(2, 4, 1, **ZEROS)
        layer(x, x, key)
        weights = weights or [normal(*w.shape) for w in layer.get_weights()]
        layer.set_weights(weights)
        outputs.append(np.asarray(layer(x, x, key)))
    assert_close(outputs[1], outputs[0], 1e-5, 1e-5, "output")
    assert not np.allclose(outputs[1][1], layer(x, x)[1], atol=1e-4)   # the key's mask matters


def test_output_carries_the_query_mask_and_scores_have_keras_shape():
    x = layers.Embedding(12, 4, mask_zero=True)(TOKENS)
    out, scores = layers.GroupQueryAttention(3, 4, 2, **ZEROS)(x, normal(3, 2, 4),
                                                     return_attention_scores=True)
    assert out.shape == (3, 6, 4) and scores.shape == (3, 4, 6, 2)
    np.testing.assert_array_equal(get_keras_mask(out), TOKENS != 0)
    symbolic = layers.GroupQueryAttention(3, 4, 2, **ZEROS)(loopax.Input((6, 4)),
                                                             loopax.Input((2, 5)),
                                                   return_attention_scores=True)
    assert [t.shape for t in symbolic] == [(None, 6, 4), (None, 4, 6, 2)]


def test_activity_regularizer_losses_match_keras():
    """Keras regularizes the four projections' outputs and the layer's own (each
    divided by the batch size)."""
    pair = build_pair("GroupQueryAttention", {**HEADS, "activity_regularizer": "l2"}, (Q, V))
    losses = []
    for layer in pair:
        layer(Q, V)
        losses.append([float(loss) for loss in layer.losses])
    assert len(losses[1]) == 5
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)


def test_config_and_saving_round_trip(tmp_path):
    layer = layers.GroupQueryAttention(**HEADS, dropout=0.1, use_bias=False, use_gate=True,
                                       sliding_window=3, kernel_regularizer="l2", seed=4)
    config = layer.get_config()
    assert layers.GroupQueryAttention.from_config(config).get_config() == config
    assert layers.deserialize(layers.serialize(layer)).get_config() == config
    keras_config = keras.layers.GroupQueryAttention(**HEADS, use_gate=True).get_config()
    from_keras = layers.GroupQueryAttention.from_config(keras_config)
    assert from_keras.use_gate and from_keras.num_key_value_heads == 2

    q, v = loopax.Input((5, 4)), loopax.Input((6, 4))
    model = loopax.Model([q, v], layers.GroupQueryAttention(**HEADS, **ZEROS)(
        q, v, use_causal_mask=True))
    model.set_weights([normal(*w.shape) for w in model.get_weights()])
    model.save(tmp_path / "gqa.keras")
    loaded = loopax.saving.load_model(tmp_path / "gqa.keras")
    np.testing.assert_allclose(loaded([Q, V]), model([Q, V]), rtol=1e-6)


def test_keras_file_with_group_query_attention_loads(tmp_path):
    q, v = keras.Input((5, 4)), keras.Input((6, 4))
    keras_model = keras.Model([q, v], keras.layers.GroupQueryAttention(**HEADS, **ZEROS)(q, v))
    keras_model.set_weights([normal(*w.shape) for w in keras_model.get_weights()])
    keras_model.save(tmp_path / "k.keras")
    model = loopax.saving.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(model([Q, V]), keras_model([Q, V]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs, match", [
    ({"num_query_heads": 3}, "must be a multiple of `num_key_value_heads`"),
    ({"head_dim": 0}, "`head_dim` must be a positive int"),
    ({"dropout": 1.0}, r"`dropout` must be in \[0, 1\)"),
    ({"sliding_window": 0}, "`sliding_window` must be a positive int"),
    ({"flash_attention": True, "dropout": 0.1}, "flash_attention=True does not support dropout"),
], ids=["heads_not_grouped", "head_dim_zero", "dropout_one", "sliding_window_zero",
        "flash_with_dropout"])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layers.GroupQueryAttention(**{**HEADS, **kwargs})


def test_bad_calls_are_refused():
    with pytest.raises(TypeError, match="needs `value` as well as `query`"):
        layers.GroupQueryAttention(**HEADS)(Q)
    with pytest.raises(ValueError, match=r"`query` must have shape \(batch, length, features\)"):
        layers.GroupQueryAttention(**HEADS)(normal(2, 3, 4, 4), normal(2, 3, 4, 4))
    with pytest.raises(ValueError, match="cannot return attention scores"):
        layers.GroupQueryAttention(**HEADS, **ZEROS, flash_attention=True)(
            Q, V, return_attention_scores=True)
