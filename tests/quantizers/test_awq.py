"""AWQ (`model.quantize("awq", config=AWQConfig(...))`) against Keras 3.15.

As in test_gptq.py, the reference is Keras's own AWQ pieces (its windows, its
`AWQ` activation statistics and scale search, its quantized layers) fed each
layer's calibration inputs: Keras's `model.quantize("awq")` records none (its
hook wraps `call`; quantized layers run `quantized_call`), so its activation
maxima stay zero; loopax records them (docs/keras_differences.md).
"""

import importlib
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keras_parity"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
# keras_reference skips this module without Keras.
from keras_reference import keras
from test_gptq import (
    CALIBRATION,
    SEQ,
    TOKENS,
    assert_quantized_like_keras,
    identity,
    keras_layerwise,
    token_model,
)

import loopax
from loopax.src.quantizers import awq

keras_awq = importlib.import_module("keras.src.quantizers.awq")


def awq_config(module, structure, **settings):
    return module.quantizers.AWQConfig(
        dataset=CALIBRATION, tokenizer=identity, num_samples=4, sequence_length=SEQ,
        quantization_layer_structure=structure, **settings)


def keras_reference(pre_layers, blocks, config):
    """Keras's AWQ: activation magnitudes per window, then its scale search."""
    def solve(layer, inputs):
        solver = keras_awq.AWQ(layer, config)
        for x in inputs:
            solver.update_activation_magnitudes(keras.ops.reshape(x, (-1, solver.rows)))
        solver.quantize_layer()

    keras_layerwise("awq", pre_layers, blocks, config, solve)

SETTINGS = [
    pytest.param(dict(group_size=4), id="groups_of_4"),
    pytest.param(dict(group_size=-1, num_grid_points=5), id="per_channel_5_points"),
]


@pytest.fixture(scope="module", params=SETTINGS)
def quantized_pair(request):
    """`(loopax model, Keras reference model, float weights)`."""
    theirs, their_pre, their_blocks = token_model(keras)
    ours, pre, blocks = token_model(loopax)
    float_weights = theirs.get_weights()
    ours.set_weights(float_weights)
    structure = {"pre_block_layers": pre, "sequential_blocks": blocks}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the Embedding is not quantizable (as in Keras)
        ours.quantize("awq", config=awq_config(loopax, structure, **request.param))
    keras_reference(their_pre, their_blocks, awq_config(keras, None, **request.param))
    return ours, theirs, float_weights


def test_quantized_weights_and_outputs_match_keras(quantized_pair):
    ours, theirs, _ = quantized_pair
    assert_quantized_like_keras(ours, theirs)


def test_channel_scales_follow_the_activations(quantized_pair):
    """The recorded activations shape the scales: they are not all one (what
    Keras's own `model.quantize("awq")`, which records none, stores)."""
    ours, _, _ = quantized_pair
    scales = [np.asarray(layer.awq_scales.value) for layer in ours.layers[2:]]
    assert [s.shape for s in scales] == [(8,), (6,), (10,)]
    assert any(not np.allclose(s, 1.0) for s in scales)


def test_quantized_model_saves_and_loads(quantized_pair, tmp_path):
    ours, _, _ = quantized_pair
    expected = ours.predict(TOKENS, verbose=0)
    ours.save(tmp_path / "awq.keras")
    loaded = loopax.saving.load_model(tmp_path / "awq.keras")
    assert [layer.dtype_policy.name for layer in loaded.layers] == [
        layer.dtype_policy.name for layer in ours.layers]
    for saved, back in zip(ours.weights, loaded.weights):
        assert (saved.name, saved.dtype) == (back.name, back.dtype)
        np.testing.assert_array_equal(np.asarray(saved.value), np.asarray(back.value))
    np.testing.assert_allclose(loaded.predict(TOKENS, verbose=0), expected, rtol=1e-6,
                               atol=1e-7)


def test_scale_search_matches_keras():
    weights = np.random.default_rng(5).normal(size=(6, 10)).astype("float32")
    maxima = np.abs(np.random.default_rng(6).normal(size=(10,))).astype("float32") * 3
    for group_size in (-1, 4):
        expected = keras_awq.awq_quantize_matrix(weights, maxima, num_grid_points=7,
                                                 group_size=group_size)
        ours = awq.quantize_matrix(weights, maxima, num_grid_points=7, group_size=group_size)
        for value, reference in zip(ours, expected):
            np.testing.assert_allclose(np.asarray(value, "float64"),
                                       np.asarray(reference, "float64"), rtol=1e-6)


# ---- the config and the policy -----------------------------------------------------
@pytest.mark.parametrize("settings", [
    pytest.param({}, id="defaults"),
    pytest.param(dict(num_samples=16, sequence_length=64, group_size=-1, num_grid_points=4),
                 id="every_argument"),
])
def test_config_matches_keras_and_round_trips(settings):
    ours = loopax.quantizers.AWQConfig(CALIBRATION, identity, **settings)
    theirs = keras.quantizers.AWQConfig(CALIBRATION, identity, **settings)
    assert ours.get_config() == theirs.get_config()
    assert ours.mode == theirs.mode == "awq"
    assert ours.dtype_policy_string() == theirs.dtype_policy_string()
    back = loopax.quantizers.deserialize(loopax.quantizers.serialize(ours))
    assert type(back) is loopax.quantizers.AWQConfig
    assert back.get_config() == ours.get_config()


@pytest.mark.parametrize("argument,value", [
    ("weight_bits", 8), ("num_samples", 0), ("sequence_length", 0), ("group_size", 0),
    ("num_grid_points", 0),
])
def test_config_refuses_what_keras_refuses_naming_the_argument(argument, value):
    with pytest.raises(ValueError):
        keras.quantizers.AWQConfig(None, None, **{argument: value})
    with pytest.raises(ValueError, match=argument):
        loopax.quantizers.AWQConfig(None, None, **{argument: value})


@pytest.mark.parametrize("name", ["awq/4/128_from_float32", "awq/4/-1_from_bfloat16"],
                         ids=["groups_of_128", "per_channel"])
def test_policy_matches_keras(name):
    ours, theirs = loopax.dtype_policies.get(name), keras.dtype_policies.get(name)
    assert type(ours).__name__ == type(theirs).__name__ == "AWQDTypePolicy"
    assert (ours.name, ours.quantization_mode, ours.weight_bits, ours.group_size) == (
        theirs.name, theirs.quantization_mode, theirs.weight_bits, theirs.group_size)
    assert ours.get_config() == theirs.get_config()
    assert loopax.dtype_policies.deserialize(keras.dtype_policies.serialize(theirs)) == ours
    assert keras.dtype_policies.deserialize(loopax.dtype_policies.serialize(ours)) == theirs


@pytest.mark.parametrize("mode,message", [("awq/8/128", "4-bit"), ("awq/4/0", "group_size")],
                         ids=["bad_bits", "bad_group"])
def test_policy_refuses_bad_modes(mode, message):
    with pytest.raises(ValueError):
        keras.dtype_policies.AWQDTypePolicy(mode, "float32")
    with pytest.raises(ValueError, match=message):
        loopax.dtype_policies.AWQDTypePolicy(mode, "float32")


def test_awq_without_data_fails_before_changing_the_model():
    model, pre, blocks = token_model(loopax)
    with pytest.raises(ValueError, match="AWQConfig"):
        model.quantize("awq")
    with pytest.raises(ValueError, match="dataset"):
        model.quantize("awq", config=loopax.quantizers.AWQConfig(
            None, identity, quantization_layer_structure={"pre_block_layers": pre,
                                                          "sequential_blocks": blocks}))
    assert all(layer.quantization_mode is None for layer in model.layers)
