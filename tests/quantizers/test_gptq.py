"""GPTQ (`model.quantize("gptq", config=GPTQConfig(...))`) against Keras 3.15.

The reference is Keras's own GPTQ pieces (its calibration windows, its
`GPTQ` Hessian accumulator and per-layer solver, its quantized layers) driven
with each layer's calibration inputs. Keras's `model.quantize("gptq")` itself
never records them (it hooks `layer.call`, but quantized layers run
`quantized_call`), so its Hessians stay zero; loopax records them, see
docs/keras_differences.md.
"""

import functools
import importlib
import sys
import warnings
from pathlib import Path
from unittest import mock

import jax
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keras_parity"))
# keras_reference skips this module without Keras.
from keras_reference import keras

import loopax
from loopax.src.quantizers import gptq

keras_gptq = importlib.import_module("keras.src.quantizers.gptq")
keras_gptq_core = importlib.import_module("keras.src.quantizers.gptq_core")
keras_gptq_solver = keras_gptq.gptq_quantize_matrix

VOCAB, SEQ = 20, 12
rng = np.random.default_rng(3)
CALIBRATION = [rng.integers(0, VOCAB, size=(1, SEQ)) for _ in range(6)]
TOKENS = rng.integers(0, VOCAB, size=(2, SEQ))


def identity(tokens):
    return tokens


def token_model(module):
    """tokens -> Embedding -> Dense -> EinsumDense (2-D kernel) -> EinsumDense
    (3-D kernel), with `(model, pre-block layers, blocks)`."""
    inputs = module.Input((SEQ,), dtype="int32")
    embedding = module.layers.Embedding(VOCAB, 8)
    dense = module.layers.Dense(6, activation="relu")
    projection = module.layers.EinsumDense("abc,cd->abd", output_shape=(None, 10),
                                           bias_axes="d")
    heads = module.layers.EinsumDense("abc,cde->abde", output_shape=(None, 2, 3))
    outputs = heads(projection(dense(embedding(inputs))))
    return module.Model(inputs, outputs), [embedding], [dense, projection, heads]


def gptq_config(module, structure, **settings):
    return module.quantizers.GPTQConfig(
        dataset=CALIBRATION, tokenizer=identity, num_samples=4, sequence_length=SEQ,
        quantization_layer_structure=structure, **settings)


def keras_layerwise(mode, pre_layers, blocks, config, solve):
    """Keras's layer-wise calibration as its `apply_<mode>_layerwise` describes
    it: each block (one layer here) quantized, then solved by
    `solve(layer, inputs)` on its real inputs (Keras's windows through the
    pre-block layers, then through the blocks already solved)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for layer in blocks:
            layer.quantize(mode, config=config)
    windows = keras_gptq_core.get_dataloader(identity, SEQ, CALIBRATION, num_samples=4)
    inputs = []
    for window in windows:
        x = keras.ops.convert_to_tensor(window, dtype="int32")
        for layer in pre_layers:
            x = layer(x)
        inputs.append(x)
    for layer in blocks:
        solve(layer, inputs)
        inputs = [layer(x) for x in inputs]


def compiled_keras_solver(weights_transpose, inv_hessian, *, order_metric, **settings):
    """Keras's `gptq_quantize_matrix` as one compiled program: op by op, its
    column loop compiles a program per column slice (most of the ~190 programs
    Keras's side compiled for this model).
    The same operations on the same values; what is tested is GPTQ, not eager."""
    solve = jax.jit(functools.partial(keras_gptq_solver, **settings))
    return solve(weights_transpose, inv_hessian, order_metric=order_metric)


def keras_reference(model, pre_layers, blocks, config):
    """Keras's GPTQ: `GPTQ.update_hessian_with_batch` per window, then its solver."""
    def solve(layer, inputs):
        solver = keras_gptq.GPTQ(layer, config)
        for x in inputs:
            solver.update_hessian_with_batch(keras.ops.reshape(x, (-1, solver.rows)))
        solver.quantize_and_correct_layer()

    with mock.patch.object(keras_gptq, "gptq_quantize_matrix", compiled_keras_solver):
        keras_layerwise("gptq", pre_layers, blocks, config, solve)
    return model


SETTINGS = [
    pytest.param(dict(weight_bits=4, group_size=4), id="4bit_groups_of_4"),
    pytest.param(dict(weight_bits=3, group_size=-1), id="3bit_per_channel"),
    pytest.param(dict(weight_bits=8, group_size=4, symmetric=True, activation_order=True),
                 id="8bit_symmetric_activation_order"),
]


@pytest.fixture(scope="module", params=SETTINGS)
def quantized_pair(request):
    """`(loopax model, Keras reference model)` from the same float weights."""
    theirs, their_pre, their_blocks = token_model(keras)
    ours, pre, blocks = token_model(loopax)
    theirs_float = theirs.get_weights()
    ours.set_weights(theirs_float)
    structure = {"pre_block_layers": pre, "sequential_blocks": blocks}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the Embedding is not quantizable (as in Keras)
        ours.quantize("gptq", config=gptq_config(loopax, structure, **request.param))
    keras_reference(theirs, their_pre, their_blocks,
                    gptq_config(keras, None, **request.param))
    return ours, theirs, theirs_float


def assert_quantized_like_keras(ours, theirs):
    """Every layer's policy, weight names, dtypes and values, and the outputs, as Keras's."""
    for mine, keras_layer in zip(ours.layers[1:], theirs.layers[1:]):   # past the Input
        assert mine.dtype_policy.name == keras_layer.dtype_policy.name, mine.name
        assert type(mine.dtype_policy).__name__ == type(keras_layer.dtype_policy).__name__
        keras_weights = [(w.name, np.asarray(w.value)) for w in keras_layer.weights]
        our_weights = [(w.name, np.asarray(w.value)) for w in mine.weights]
        assert [n for n, _ in our_weights] == [n for n, _ in keras_weights], mine.name
        for (name, value), (_, expected) in zip(our_weights, keras_weights):
            assert value.dtype == expected.dtype, (mine.name, name)
            np.testing.assert_allclose(value, expected, rtol=1e-6, atol=1e-7,
                                       err_msg=f"{mine.name}/{name}")
    np.testing.assert_allclose(np.asarray(ours(TOKENS)), np.asarray(theirs(TOKENS)),
                               rtol=1e-5, atol=1e-6)


def test_quantized_weights_and_outputs_match_keras(quantized_pair):
    ours, theirs, _ = quantized_pair
    assert_quantized_like_keras(ours, theirs)


def test_calibration_inputs_change_the_weights(quantized_pair):
    """The error feedback acts: the first layer's stored values differ from
    those of an identity Hessian (rounding each weight to its grid alone, what
    Keras's own `model.quantize("gptq")` stores)."""
    ours, _, float_weights = quantized_pair
    dense = ours.layers[2]
    policy = dense.dtype_policy
    rounded, _, _, _ = gptq.quantize_matrix(
        float_weights[1].T, np.eye(8, dtype="float32"), bits=policy.weight_bits,
        group_size=policy.group_size, symmetric=dense.quantization_config.symmetric)
    values = dense.quantized_kernel.value
    if policy.weight_bits == 4:
        values = loopax.quantizers.unpack_int4(values, dense.units, axis=0, dtype="uint8")
    assert np.asarray(values).shape == np.asarray(rounded).shape == (6, 8)
    assert (np.asarray(values) != np.asarray(rounded)).any()


def test_quantized_model_saves_and_loads(quantized_pair, tmp_path):
    ours, _, _ = quantized_pair
    expected = ours.predict(TOKENS, verbose=0)
    ours.save(tmp_path / "gptq.keras")
    loaded = loopax.saving.load_model(tmp_path / "gptq.keras")
    assert [layer.dtype_policy.name for layer in loaded.layers] == [
        layer.dtype_policy.name for layer in ours.layers]
    for saved, back in zip(ours.weights, loaded.weights):
        assert (saved.name, saved.dtype) == (back.name, back.dtype)
        np.testing.assert_array_equal(np.asarray(saved.value), np.asarray(back.value))
    np.testing.assert_allclose(loaded.predict(TOKENS, verbose=0), expected, rtol=1e-6,
                               atol=1e-7)


# ---- the config and the policy -----------------------------------------------------
CONFIGS = [
    pytest.param({}, id="defaults"),
    pytest.param(dict(weight_bits=3, num_samples=16, sequence_length=64,
                      hessian_damping=0.05, group_size=-1, symmetric=True,
                      activation_order=True, per_channel=False), id="every_argument"),
]


@pytest.mark.parametrize("settings", CONFIGS)
def test_config_matches_keras_and_round_trips(settings):
    ours = loopax.quantizers.GPTQConfig(CALIBRATION, identity, **settings)
    theirs = keras.quantizers.GPTQConfig(CALIBRATION, identity, **settings)
    assert ours.get_config() == theirs.get_config()
    assert ours.mode == theirs.mode == "gptq"
    assert ours.dtype_policy_string() == theirs.dtype_policy_string()
    back = loopax.quantizers.deserialize(loopax.quantizers.serialize(ours))
    assert type(back) is loopax.quantizers.GPTQConfig
    assert back.get_config() == ours.get_config()
    assert back.dataset is None and back.tokenizer is None   # not saved, as Keras


@pytest.mark.parametrize("argument,value", [
    ("weight_bits", 5), ("weight_bits", 1), ("num_samples", 0), ("sequence_length", -1),
    ("hessian_damping", 1.5), ("group_size", 0), ("group_size", -2),
])
def test_config_refuses_what_keras_refuses_naming_the_argument(argument, value):
    with pytest.raises(ValueError):
        keras.quantizers.GPTQConfig(None, None, **{argument: value})
    with pytest.raises(ValueError, match=argument):
        loopax.quantizers.GPTQConfig(None, None, **{argument: value})


@pytest.mark.parametrize("name", ["gptq/4/128_from_float32", "gptq/3/-1_from_bfloat16",
                                  "gptq/8/32_from_mixed_bfloat16"],
                         ids=["4bit_128", "3bit_per_channel", "8bit_mixed"])
def test_policy_matches_keras(name):
    ours = loopax.dtype_policies.get(name)
    theirs = keras.dtype_policies.get(name)
    assert type(ours).__name__ == type(theirs).__name__ == "GPTQDTypePolicy"
    assert (ours.name, ours.compute_dtype, ours.variable_dtype, ours.quantization_mode,
            ours.weight_bits, ours.group_size) == (
        theirs.name, theirs.compute_dtype, theirs.variable_dtype, theirs.quantization_mode,
        theirs.weight_bits, theirs.group_size)
    assert ours.get_config() == theirs.get_config()
    assert loopax.dtype_policies.deserialize(keras.dtype_policies.serialize(theirs)) == ours
    assert keras.dtype_policies.deserialize(loopax.dtype_policies.serialize(ours)) == theirs


@pytest.mark.parametrize("mode,message", [
    ("gptq/5/128", "weight_bits"), ("gptq/4/0", "group_size"), ("gptq/4", "format"),
    ("gptq/four/128", "integers"),
], ids=["bad_bits", "bad_group", "missing_part", "not_a_number"])
def test_policy_refuses_bad_modes(mode, message):
    with pytest.raises(ValueError):
        keras.dtype_policies.GPTQDTypePolicy(mode, "float32")
    with pytest.raises(ValueError, match=message):
        loopax.dtype_policies.GPTQDTypePolicy(mode, "float32")


# ---- errors before any change ------------------------------------------------------
def small_model():
    model, pre, blocks = token_model(loopax)
    return model, {"pre_block_layers": pre, "sequential_blocks": blocks}


@pytest.mark.parametrize("make_call,message", [
    (lambda model, structure: model.quantize("gptq"), "GPTQConfig"),
    (lambda model, structure: model.quantize("gptq", config=loopax.quantizers.GPTQConfig(
        None, identity, quantization_layer_structure=structure)), "dataset"),
    (lambda model, structure: model.quantize("gptq", config=loopax.quantizers.GPTQConfig(
        CALIBRATION, None, quantization_layer_structure=structure)), "tokenizer"),
    (lambda model, structure: model.quantize("gptq", config=loopax.quantizers.GPTQConfig(
        CALIBRATION, identity)), "quantization_layer_structure"),
    (lambda model, structure: model.quantize("gptq", config=loopax.quantizers.GPTQConfig(
        CALIBRATION, identity, quantization_layer_structure={"pre_block_layers": []})),
     "sequential_blocks"),
], ids=["no_config", "no_dataset", "no_tokenizer", "no_structure", "no_blocks"])
def test_bad_gptq_calls_fail_before_changing_the_model(make_call, message):
    model, structure = small_model()
    before = [np.asarray(w.value) for w in model.weights]
    with pytest.raises(ValueError, match=message):
        make_call(model, structure)
    assert all(layer.quantization_mode is None for layer in model.layers)
    for value, weight in zip(before, model.weights):
        np.testing.assert_array_equal(value, np.asarray(weight.value))


def test_structure_from_the_model_hook_and_filters():
    """`get_quantization_layer_structure` supplies the structure; a layer the
    filters leave out keeps its float kernel."""
    model, structure = small_model()
    model.get_quantization_layer_structure = lambda mode: structure
    float_kernel = np.asarray(model.layers[3].kernel.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.quantize("gptq", config=gptq_config(loopax, None, group_size=-1),
                       filters=lambda layer: layer.name != model.layers[3].name)
    assert [layer.quantization_mode for layer in model.layers[2:]] == ["gptq", None, "gptq"]
    np.testing.assert_array_equal(np.asarray(model.layers[3].kernel.value), float_kernel)
    assert model.layers[2].is_gptq_calibrated and model.layers[4].is_gptq_calibrated


def test_layers_outside_the_blocks_stay_float_with_a_warning():
    """As Keras, a layer in no sequential block gets GPTQ weights but keeps its
    float kernel; loopax says so, naming it."""
    model, structure = small_model()
    heads = model.layers[-1]
    float_kernel = np.asarray(heads.kernel.value)
    structure["sequential_blocks"] = structure["sequential_blocks"][:2]
    with pytest.warns(UserWarning, match=f"'{heads.name}'.*not calibrated"):
        model.quantize("gptq", config=gptq_config(loopax, structure, group_size=-1))
    assert heads.quantization_mode == "gptq" and not heads.is_gptq_calibrated
    np.testing.assert_array_equal(np.asarray(heads.kernel.value), float_kernel)
