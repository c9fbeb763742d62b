"""Quantized dtype policies, DTypePolicyMap and dtype_policies.serialize /
deserialize against Keras 3.15's."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keras_parity"))
# keras_reference skips this module without Keras.
from keras_reference import keras

import loopax
from loopax import dtype_policies


@pytest.mark.parametrize("name", [
    "int8_from_float32", "int8_from_mixed_bfloat16", "int4_from_float32",
    "int4/128_from_float32", "int4/-1_from_bfloat16", "float8_from_mixed_bfloat16",
], ids=lambda name: name.replace("/", "_block"))
def test_quantized_policy_names_match_keras(name):
    ours, theirs = dtype_policies.get(name), keras.dtype_policies.get(name)
    assert type(ours).__name__ == type(theirs).__name__
    assert (ours.name, ours.compute_dtype, ours.variable_dtype, ours.quantization_mode) == (
        theirs.name, theirs.compute_dtype, theirs.variable_dtype, theirs.quantization_mode)
    assert ours.get_config() == theirs.get_config()
    assert repr(ours) == repr(theirs)
    # Each side reads the other's serialized form.
    assert dtype_policies.deserialize(keras.dtype_policies.serialize(theirs)) == ours
    assert keras.dtype_policies.deserialize(dtype_policies.serialize(ours)) == theirs


def test_float8_policy_keeps_its_amax_history_length():
    ours = dtype_policies.QuantizedFloat8DTypePolicy("float8", "float32", 16)
    theirs = keras.dtype_policies.QuantizedFloat8DTypePolicy("float8", "float32", 16)
    assert ours.get_config() == theirs.get_config()
    assert dtype_policies.deserialize(dtype_policies.serialize(ours)).amax_history_length == 16
    with pytest.raises(TypeError, match="amax_history_length"):
        dtype_policies.QuantizedFloat8DTypePolicy("float8", "float32", 1.5)


@pytest.mark.parametrize("make", [
    lambda m: m.QuantizedDTypePolicy("int3", "float32"),
    lambda m: m.QuantizedDTypePolicy("int8", "float16"),
    lambda m: m.Int4DTypePolicy("int4", "float32"),
    lambda m: m.Int4DTypePolicy("int4/0", "float32"),
    lambda m: m.Int4DTypePolicy("int4/x", "float32"),
], ids=["unknown_mode", "int8_with_float16", "int4_without_block", "int4_zero_block",
        "int4_block_not_int"])
def test_bad_quantized_policies_are_refused_as_keras(make):
    for module in (dtype_policies, keras.dtype_policies):
        with pytest.raises(ValueError):
            make(module)


def test_float_dtype_policy_equals_a_plain_policy_as_in_keras():
    assert loopax.FloatDTypePolicy("float32") == dtype_policies.DTypePolicy("float32")
    assert (keras.FloatDTypePolicy("float32") == keras.DTypePolicy("float32"))
    assert repr(loopax.FloatDTypePolicy("bfloat16")) == repr(keras.FloatDTypePolicy("bfloat16"))
    assert dtype_policies.DTypePolicy("float32") != dtype_policies.get("int8_from_float32")


def _policy_map(module):
    policy_map = module.dtype_policies.DTypePolicyMap(default_policy="float32")
    policy_map["encoder/layer_0/dense"] = "bfloat16"
    policy_map["encoder/.*"] = module.dtype_policies.get("int8_from_float32")
    policy_map["decoder"] = "mixed_bfloat16"
    return policy_map


@pytest.mark.parametrize("path", ["encoder/layer_0/dense", "encoder/attention/query", "decoder",
                                  "decoder/attention", "other"])
def test_dtype_policy_map_lookups_match_keras(path):
    ours, theirs = _policy_map(loopax), _policy_map(keras)
    assert ours[path].name == theirs[path].name
    assert (ours.name, ours.compute_dtype, len(ours)) == (theirs.name, theirs.compute_dtype,
                                                          len(theirs))


def test_dtype_policy_map_errors_and_round_trip():
    policy_map = _policy_map(loopax)
    with pytest.raises(ValueError, match="already exist"):
        policy_map["decoder"] = "float32"
    policy_map["encoder/attention/.*"] = "bfloat16"
    with pytest.raises(ValueError, match="matches multiple"):
        policy_map["encoder/attention/query"]
    with pytest.raises(ValueError, match="cannot be a `DTypePolicyMap`"):
        dtype_policies.DTypePolicyMap(default_policy=policy_map)
    back = dtype_policies.deserialize(dtype_policies.serialize(policy_map))
    assert isinstance(back, dtype_policies.DTypePolicyMap)
    assert {k: back[k].name for k in back} == {k: policy_map[k].name for k in policy_map}
    keras_back = keras.dtype_policies.deserialize(dtype_policies.serialize(_policy_map(loopax)))
    assert keras_back["encoder/x"].name == "int8_from_float32"


def test_quantized_policy_can_be_set_globally_as_in_keras():
    try:
        loopax.mixed_precision.set_global_policy("int8_from_float32")
        assert dtype_policies.get(None).quantization_mode == "int8"
    finally:
        loopax.mixed_precision.set_global_policy(None)
