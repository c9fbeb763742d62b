"""loopax.quantizers' functions, quantizers and configs against Keras 3.15's
(same inputs, outputs compared), plus their errors and round trips."""

import functools
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keras_parity"))
# keras_reference skips this module without Keras.
from keras_reference import keras

from loopax import quantizers

rng = np.random.default_rng(7)
X = rng.normal(size=(6, 5)).astype("float32") * 3


def np_of(x):
    return np.asarray(x)


@pytest.mark.parametrize("axis", [0, -1, (0, 1)], ids=["first_axis", "last_axis", "both_axes"])
@pytest.mark.parametrize("to_numpy", [False, True], ids=["device", "numpy"])
def test_abs_max_quantize_matches_keras(axis, to_numpy):
    ours = quantizers.abs_max_quantize(X, axis, to_numpy=to_numpy)
    theirs = keras.quantizers.abs_max_quantize(X, axis, to_numpy=to_numpy)
    np.testing.assert_array_equal(np_of(ours[0]), np_of(theirs[0]))
    assert np_of(ours[0]).dtype == np.int8
    np.testing.assert_allclose(np_of(ours[1]), np_of(theirs[1]), rtol=1e-6)


@pytest.mark.parametrize("rows,block", [(8, 4), (7, 3)], ids=["even_groups", "padded_group"])
@pytest.mark.parametrize("to_numpy", [False, True], ids=["device", "numpy"])
def test_grouped_quantize_with_zero_point_matches_keras(rows, block, to_numpy):
    x = rng.normal(size=(rows, 5)).astype("float32")
    ours = quantizers.abs_max_quantize_grouped_with_zero_point(x, block, to_numpy=to_numpy)
    theirs = functools.partial(keras.quantizers.abs_max_quantize_grouped_with_zero_point,
                               block_size=block, to_numpy=to_numpy)
    # Keras's device path compiled as one program (op by op: ~35 programs a shape);
    # the same operations on the same values. Ours runs as a user calls it.
    theirs = theirs(x) if to_numpy else jax.jit(theirs)(x)
    for a, b in zip(ours, theirs):
        assert np_of(a).shape == np_of(b).shape
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=1e-6)
    assert np_of(ours[2]).dtype == np.int8


@pytest.mark.parametrize("axis", [0, 1, -1], ids=["pack_rows", "pack_columns", "pack_last_axis"])
@pytest.mark.parametrize("rows", [4, 5], ids=["even", "odd"])
def test_pack_and_unpack_int4_match_keras(axis, rows):
    x = rng.integers(-8, 8, size=(rows, 3)).astype("int8")
    packed, shape, orig = quantizers.pack_int4(x, axis=axis)
    k_packed, k_shape, k_orig = keras.quantizers.pack_int4(x, axis=axis)
    np.testing.assert_array_equal(np_of(packed), np_of(k_packed))
    assert (shape, orig) == (tuple(k_shape), k_orig)
    np.testing.assert_array_equal(np_of(quantizers.unpack_int4(packed, orig, axis=axis)), x)


def test_unpack_int4_uint8_matches_keras():
    x = rng.integers(0, 16, size=(5, 4)).astype("uint8")
    packed, _, orig = keras.quantizers.pack_int4(x, dtype="uint8")
    ours = quantizers.unpack_int4(np_of(packed), orig, dtype="uint8")
    np.testing.assert_array_equal(np_of(ours), x)


def test_pack_int4_refuses_wrong_dtypes_as_keras():
    with pytest.raises(ValueError, match="'int8' or 'uint8'"):
        quantizers.pack_int4(np.zeros((2, 2), "int8"), dtype="int16")
    with pytest.raises(TypeError, match="Expected int8 tensor"):
        quantizers.pack_int4(np.zeros((2, 2), "float32"))


def test_float8_scale_amax_history_and_qdq_match_keras():
    amax = np.array([0.0, 3.5, np.inf, 448.0], "float32")
    scale = np.array([2.0, 0.5, 0.25, 1.0], "float32")
    np.testing.assert_allclose(np_of(quantizers.compute_float8_scale(amax, scale, 448.0)),
                               np_of(keras.quantizers.compute_float8_scale(amax, scale, 448.0)),
                               rtol=1e-6)
    np.testing.assert_allclose(
        np_of(quantizers.compute_float8_scale(amax, scale, 448.0, margin=2)),
        np_of(keras.quantizers.compute_float8_scale(amax, scale, 448.0, margin=2)), rtol=1e-6)
    history = np.arange(5, dtype="float32")
    np.testing.assert_array_equal(
        np_of(quantizers.compute_float8_amax_history(X, history)),
        np_of(keras.quantizers.compute_float8_amax_history(X, history)))
    for dtype in ("float8_e4m3fn", "float8_e5m2"):
        np.testing.assert_array_equal(
            np_of(quantizers.quantize_and_dequantize(X * 100, 0.3, dtype, "float32")),
            np_of(keras.quantizers.quantize_and_dequantize(X * 100, 0.3, dtype, "float32")))


@pytest.mark.parametrize("axis,low,high", [
    (None, -1.0, 2.0),
    (1, np.linspace(-2, -0.5, 5).astype("float32"), np.linspace(0.5, 3, 5).astype("float32")),
], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("narrow", [False, True], ids=["full_range", "narrow_range"])
def test_fake_quant_values_and_gradients_match_keras(axis, low, high, narrow):
    def loss(fn):
        return lambda x, lo, hi: (fn(x, lo, hi, num_bits=4, narrow_range=narrow, axis=axis)
                                  * np.arange(5, dtype="float32")).sum()

    low, high = np.asarray(low, "float32"), np.asarray(high, "float32")
    ours = quantizers.fake_quant_with_min_max_vars(X, low, high, 4, narrow, axis)
    theirs = keras.quantizers.fake_quant_with_min_max_vars(X, low, high, 4, narrow, axis)
    np.testing.assert_allclose(np_of(ours), np_of(theirs), rtol=1e-6, atol=1e-6)
    # The gradients as one compiled program each (op by op, each primitive's
    # derivative compiles its own); the values above stay eager.
    g_ours = jax.jit(jax.grad(loss(quantizers.fake_quant_with_min_max_vars), (0, 1, 2)))(
        X, low, high)
    g_theirs = jax.jit(jax.grad(loss(keras.quantizers.fake_quant_with_min_max_vars),
                                (0, 1, 2)))(X, low, high)
    for a, b in zip(g_ours, g_theirs):
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=1e-6)


def test_abs_max_quantizer_call_config_and_errors_match_keras():
    ours, theirs = quantizers.AbsMaxQuantizer(axis=0), keras.quantizers.AbsMaxQuantizer(axis=0)
    np.testing.assert_array_equal(np_of(ours(X)[0]), np_of(theirs(X)[0]))
    np.testing.assert_array_equal(np_of(ours(X, axis=1)[0]), np_of(theirs(X, axis=1)[0]))
    assert ours.get_config() == theirs.get_config()
    with pytest.raises(ValueError, match=r"within \[-128, 127\]"):
        quantizers.AbsMaxQuantizer(value_range=(-200, 127))


def test_quantizer_serialize_round_trip_and_get():
    q = quantizers.AbsMaxQuantizer(axis=1, value_range=(-8, 7))
    back = quantizers.deserialize(quantizers.serialize(q))
    assert isinstance(back, quantizers.AbsMaxQuantizer)
    assert back.get_config() == q.get_config()
    assert quantizers.serialize(q)["class_name"] == keras.quantizers.serialize(
        keras.quantizers.AbsMaxQuantizer(axis=1, value_range=(-8, 7)))["class_name"]
    assert quantizers.get(None) is None and quantizers.get(q) is q
    assert isinstance(quantizers.get("abs_max_quantizer"), quantizers.AbsMaxQuantizer)
    with pytest.raises(ValueError, match="Unknown quantizer"):
        quantizers.get("abs_max_quantiser")


@pytest.mark.parametrize("name,kwargs", [
    ("Int8QuantizationConfig", {}),
    ("Int4QuantizationConfig", {"block_size": 64}),
    ("Int4QuantizationConfig", {"block_size": None, "weight_quantizer": "int4_per_channel"}),
    ("Float8QuantizationConfig", {}),
], ids=["int8", "int4_grouped", "int4_per_channel_custom", "float8"])
def test_quantization_configs_match_keras(name, kwargs):
    def make(module):
        args = dict(kwargs)
        if args.get("weight_quantizer") == "int4_per_channel":
            args["weight_quantizer"] = module.AbsMaxQuantizer(axis=0, value_range=(-8, 7))
        return getattr(module, name)(**args)

    ours, theirs = make(quantizers), make(keras.quantizers)
    assert ours.mode == theirs.mode
    config, k_config = ours.get_config(), theirs.get_config()
    assert set(config) == set(k_config)
    for key in ("weight_quantizer", "activation_quantizer"):
        if key in config:
            assert (config[key] is None) == (k_config[key] is None)
            if config[key] is not None:
                assert config[key]["config"] == k_config[key]["config"]
    back = type(ours).from_config(config)
    assert back.get_config() == config


@pytest.mark.parametrize("make,message", [
    (lambda m: m.Int4QuantizationConfig(block_size=0), "block_size must be None"),
    (lambda m: m.Int4QuantizationConfig(block_size=64,
                                        weight_quantizer=m.AbsMaxQuantizer(value_range=(-8, 7))),
     "does not support custom"),
    (lambda m: m.Int4QuantizationConfig(block_size=None,
                                        weight_quantizer=m.AbsMaxQuantizer()),
     "value_range=\\(-8, 7\\)"),
    (lambda m: m.Int8QuantizationConfig(
        weight_quantizer=m.AbsMaxQuantizer(output_dtype="int16")), "output_dtype='int8'"),
], ids=["zero_block", "custom_with_groups", "int4_wrong_range", "int8_wrong_dtype"])
def test_config_errors_match_keras(make, message):
    for module in (quantizers, keras.quantizers):
        with pytest.raises(ValueError, match=message):
            make(module)
