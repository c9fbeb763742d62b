"""`layer.quantize` / `model.quantize` ("int8", "int4", "float8") against Keras
3.15: Keras's weights copied in before quantizing, then the quantized weights,
policies, outputs and input gradients compared; quantized models save and load."""

import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keras_parity"))
# keras_reference skips this module without Keras.
from keras_reference import keras

import loopax

rng = np.random.default_rng(11)
DENSE_X = rng.normal(size=(4, 6)).astype("float32")
TOKENS = rng.integers(0, 10, size=(4, 3))

MODES = [
    pytest.param("int8", None, id="int8"),
    pytest.param("int4", None, id="int4_default_groups"),
    pytest.param("int4", 4, id="int4_groups_of_four"),
    pytest.param("int4", -1, id="int4_per_channel"),
]


def config_for(module, block_size):
    return None if block_size is None else module.quantizers.Int4QuantizationConfig(
        block_size=block_size)


def quantized_pair(make, build_arg, mode, block_size, policy="float32"):
    theirs, ours = make(keras, policy), make(loopax, policy)
    theirs.build(build_arg)
    ours.build(build_arg)
    ours.set_weights(theirs.get_weights())
    theirs.quantize(mode, config=config_for(keras, block_size))
    ours.quantize(mode, config=config_for(loopax, block_size))
    return ours, theirs


def dense(module, policy):
    return module.layers.Dense(5, activation="relu", dtype=policy)


def embedding(module, policy):
    return module.layers.Embedding(10, 6, dtype=policy)


def assert_same_quantized_layer(ours, theirs, x):
    assert ours.dtype_policy.name == theirs.dtype_policy.name
    assert type(ours.dtype_policy).__name__ == type(theirs.dtype_policy).__name__
    mine = {w.name: np.asarray(w.value) for w in ours.weights}
    keras_weights = {w.name: np.asarray(w.value) for w in theirs.weights}
    assert mine.keys() == keras_weights.keys()
    for name, value in keras_weights.items():
        assert mine[name].dtype == value.dtype, name
        np.testing.assert_array_equal(mine[name], value, err_msg=name)
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=1e-6,
                               atol=1e-6)


def input_gradient(loss, x):
    """`d loss / d x` as one compiled program: op by op, each primitive's
    derivative compiles its own (~50 for a float8 layer and Keras's). The forward
    passes stay eager in the tests that compare outputs."""
    return np.asarray(jax.jit(jax.grad(loss))(x))


@pytest.mark.parametrize("mode,block_size", MODES)
def test_quantized_dense_matches_keras(mode, block_size):
    ours, theirs = quantized_pair(dense, (None, 6), mode, block_size)
    assert_same_quantized_layer(ours, theirs, DENSE_X)


@pytest.mark.parametrize("mode,block_size", MODES)
def test_quantized_embedding_matches_keras(mode, block_size):
    ours, theirs = quantized_pair(embedding, None, mode, block_size)
    assert_same_quantized_layer(ours, theirs, TOKENS)


def test_quantized_dense_under_mixed_bfloat16_matches_keras():
    ours, theirs = quantized_pair(dense, (None, 6), "int8", None, policy="mixed_bfloat16")
    assert ours.dtype_policy.name == "int8_from_mixed_bfloat16"
    out, k_out = ours(DENSE_X), theirs(DENSE_X)
    assert out.dtype == k_out.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(out, "float32"), np.asarray(k_out, "float32"),
                               rtol=1e-2)


def test_float8_dense_forward_matches_keras():
    ours, theirs = quantized_pair(dense, (None, 6), "float8", None)
    theirs.inputs_scale.assign(0.01)
    ours.inputs_scale.assign(0.01)
    assert_same_quantized_layer(ours, theirs, DENSE_X * 3)


@pytest.mark.parametrize("mode,block_size", MODES[:2] + MODES[3:])
def test_input_gradient_of_quantized_dense_matches_keras(mode, block_size):
    ours, theirs = quantized_pair(dense, (None, 6), mode, block_size)

    def loss(layer):
        return lambda x: jnp.sum(jnp.asarray(layer(x)) * jnp.arange(5.0))

    np.testing.assert_allclose(input_gradient(loss(ours), DENSE_X),
                               input_gradient(loss(theirs), DENSE_X), rtol=1e-5, atol=1e-6)


def test_custom_int8_config_matches_keras():
    def make(module):
        q = module.quantizers
        return q.Int8QuantizationConfig(
            weight_quantizer=q.AbsMaxQuantizer(axis=0, value_range=(-100, 100)),
            activation_quantizer=None)

    theirs, ours = dense(keras, "float32"), dense(loopax, "float32")
    theirs.build((None, 6))
    ours.build((None, 6))
    ours.set_weights(theirs.get_weights())
    theirs.quantize(config=make(keras))
    ours.quantize(config=make(loopax))
    assert_same_quantized_layer(ours, theirs, DENSE_X)


def sequential(module):
    return module.Sequential([module.Input((6,)), module.layers.Dense(8, activation="relu"),
                              module.layers.Dropout(0.1), module.layers.Dense(3)])


@pytest.mark.parametrize("mode,block_size", MODES + [pytest.param("float8", None, id="float8")])
def test_model_quantize_matches_keras_and_saves(mode, block_size, tmp_path):
    theirs, ours = sequential(keras), sequential(loopax)
    ours.set_weights(theirs.get_weights())
    theirs.quantize(mode, config=config_for(keras, block_size))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours.quantize(mode, config=config_for(loopax, block_size))
    assert any("Dropout does not have a `quantize`" in str(w.message) for w in caught)
    assert [layer.dtype_policy.name for layer in ours.layers] == [
        layer.dtype_policy.name for layer in theirs.layers]
    expected = np.asarray(theirs.predict(DENSE_X, verbose=0))
    np.testing.assert_allclose(ours.predict(DENSE_X, verbose=0), expected, rtol=1e-5, atol=1e-6)

    path = tmp_path / "quantized.keras"
    ours.save(path)
    loaded = loopax.saving.load_model(path)
    assert [layer.dtype_policy.name for layer in loaded.layers] == [
        layer.dtype_policy.name for layer in ours.layers]
    for saved, back in zip(ours.weights, loaded.weights):
        assert (saved.name, saved.dtype) == (back.name, back.dtype)
        np.testing.assert_array_equal(np.asarray(saved.value), np.asarray(back.value))
    np.testing.assert_allclose(loaded.predict(DENSE_X, verbose=0), expected, rtol=1e-5,
                               atol=1e-6)


def test_quantized_layer_config_rebuilds_quantized():
    layer = loopax.layers.Dense(4)
    layer.build((None, 3))
    layer.quantize("int4", config=loopax.quantizers.Int4QuantizationConfig(block_size=2))
    clone = loopax.layers.Dense.from_config(layer.get_config())
    clone.build((None, 3))
    assert [(w.name, w.shape, w.dtype) for w in clone.weights] == [
        (w.name, w.shape, w.dtype) for w in layer.weights]


def test_setting_a_quantized_policy_quantizes_a_built_layer_as_keras():
    theirs, ours = dense(keras, "float32"), dense(loopax, "float32")
    theirs.build((None, 6))
    ours.build((None, 6))
    ours.set_weights(theirs.get_weights())
    theirs.dtype_policy = "int8_from_float32"
    ours.dtype_policy = "int8_from_float32"
    assert_same_quantized_layer(ours, theirs, DENSE_X)


@pytest.mark.parametrize("call,message", [
    (lambda layer: layer.quantize("int3"), "Invalid quantization mode"),
    (lambda layer: layer.quantize(), "either `mode` or `config`"),
    (lambda layer: layer.quantize("int8", config=loopax.quantizers.Int4QuantizationConfig()),
     "Contradictory arguments"),
    (lambda layer: layer.quantize(config="int8") or layer.quantize("int8"), "already quantized"),
], ids=["unknown_mode", "no_mode", "contradiction", "twice"])
def test_quantize_errors(call, message):
    layer = loopax.layers.Dense(2)
    layer.build((None, 3))
    with pytest.raises(ValueError, match=message):
        call(layer)


def test_unbuilt_layers_and_subclasses_are_refused():
    with pytest.raises(ValueError, match="isn't yet built"):
        loopax.layers.Dense(2).quantize("int8")

    class MyDense(loopax.layers.Dense):
        pass

    layer = MyDense(2)
    layer.build((None, 3))
    with pytest.raises(NotImplementedError, match="type_check=False"):
        layer.quantize("int8")
    layer.quantize("int8", type_check=False)
    assert layer.quantization_mode == "int8"
    embedding_layer = loopax.layers.Embedding(4, 2)
    embedding_layer.build()
    with pytest.raises(NotImplementedError, match="Invalid quantization mode"):
        embedding_layer.quantize("float8")


def test_float8_training_steps_match_keras():
    """Two epochs of fit() on a float8 model: the losses, the trained kernels and
    the delayed scales / amax histories (which the optimizer overwrites with
    their "gradients") equal Keras's."""
    x = rng.normal(size=(16, 6)).astype("float32")
    y = rng.normal(size=(16, 3)).astype("float32")
    def two_dense(module):   # no Dropout: its random masks differ between the libraries
        return module.Sequential([module.Input((6,)), module.layers.Dense(8, activation="relu"),
                                  module.layers.Dense(3)])

    theirs, ours = two_dense(keras), two_dense(loopax)
    ours.set_weights(theirs.get_weights())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs.quantize("float8")
        ours.quantize("float8")
    theirs.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    ours.compile(optimizer=loopax.optimizers.SGD(0.1), loss="mse")
    k_history = theirs.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    history = ours.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"], k_history.history["loss"], rtol=1e-5)
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    for mine, keras_weight in zip(ours.weights, theirs.weights):
        np.testing.assert_allclose(np.asarray(mine.value), np.asarray(keras_weight.value),
                                   rtol=1e-5, atol=1e-7, err_msg=mine.name)
    assert float(ours.layers[0].inputs_scale.value) != 1.0   # the scales did move


EINSUM_CASES = [
    pytest.param("ab,bc->ac", (5,), "c", (3, 4), id="matmul"),
    pytest.param("abc,cd->abd", (None, 5), "d", (2, 3, 4), id="sequence_projection"),
    pytest.param("abc,cde->abde", (None, 2, 5), "de", (2, 3, 4), id="attention_heads"),
    pytest.param("abcd,cde->abe", (None, 5), "e", (2, 3, 4, 6), id="two_contracted_axes"),
]


@pytest.mark.parametrize("mode", ["int8", "float8"])
@pytest.mark.parametrize("equation,output_shape,bias_axes,input_shape", EINSUM_CASES)
def test_quantized_einsum_dense_matches_keras(equation, output_shape, bias_axes, input_shape,
                                              mode):
    x = rng.normal(size=input_shape).astype("float32")

    def make(module, policy):
        return module.layers.EinsumDense(equation, output_shape, bias_axes=bias_axes)

    ours, theirs = quantized_pair(make, input_shape, mode, None)
    assert ours.dtype_policy.name == theirs.dtype_policy.name
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=1e-6, atol=1e-6)

    def loss(layer):
        return lambda x: jnp.sum(jnp.asarray(layer(x)) ** 2)

    np.testing.assert_allclose(input_gradient(loss(ours), x), input_gradient(loss(theirs), x),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("with_ellipsis,explicit,input_shape", [
    (("...b,bc->...c", (5,)), ("abc,cd->abd", (None, 5)), (2, 3, 4)),
    (("ab...,bc->ac...", (5,)), ("abd,bc->acd", (5, None)), (2, 4, 3)),
], ids=["leading_ellipsis", "trailing_ellipsis"])
def test_int8_einsum_dense_with_ellipsis_equals_the_explicit_equation(
        with_ellipsis, explicit, input_shape):
    """Keras 3.15 cannot quantize ellipsis equations (a TypeError in its
    analysis); loopax gives what the same equation written out gives."""
    x = rng.normal(size=input_shape).astype("float32")
    layers = []
    for equation, output_shape in (with_ellipsis, explicit):
        layer = loopax.layers.EinsumDense(equation, output_shape)
        layer.build(input_shape)
        layers.append(layer)
    layers[0].set_weights(layers[1].get_weights())
    for layer in layers:
        layer.quantize("int8")
    np.testing.assert_allclose(np.asarray(layers[0](x)), np.asarray(layers[1](x)), rtol=1e-6)
    assert not np.allclose(np.asarray(layers[0](x)),
                           np.einsum(explicit[0], x, layers[1].kernel.value.astype("float32")))


def test_int4_einsum_dense_is_refused_clearly():
    layer = loopax.layers.EinsumDense("ab,bc->ac", 4)
    layer.build((None, 3))
    with pytest.raises(NotImplementedError, match="Invalid quantization mode.*int4"):
        layer.quantize("int4")


def test_int8_einsum_dense_model_saves_and_loads(tmp_path):
    inputs = loopax.Input((3, 4))
    outputs = loopax.layers.EinsumDense("abc,cde->abde", (None, 2, 5), bias_axes="de")(inputs)
    model = loopax.Model(inputs, outputs)
    model.quantize("int8")
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    model.save(tmp_path / "einsum.keras")
    loaded = loopax.saving.load_model(tmp_path / "einsum.keras")
    assert loaded.layers[-1].dtype_policy.name == "int8_from_float32"
    assert loaded.layers[-1].kernel.dtype == "int8"
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_custom_config_survives_save_and_load(tmp_path):
    """A layer quantized without input quantization keeps computing so once loaded
    (its config carries the quantization config, as Keras's does)."""
    model = loopax.Sequential([loopax.Input((6,)), loopax.layers.Dense(3)])
    model.quantize(config=loopax.quantizers.Int8QuantizationConfig(activation_quantizer=None))
    x = DENSE_X * np.array([100, 1, 1, 1, 1, 0.01], "float32")
    model.save(tmp_path / "custom.keras")
    loaded = loopax.saving.load_model(tmp_path / "custom.keras")
    assert loaded.layers[0].quantization_config.activation_quantizer is None
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_keras_quantized_file_loads(mode, tmp_path):
    theirs = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5),
                               keras.layers.Embedding(10, 4)])
    theirs.quantize(mode)
    theirs.save(tmp_path / "keras_quantized.keras")
    ours = loopax.saving.load_model(tmp_path / "keras_quantized.keras")
    assert [layer.dtype_policy.name for layer in ours.layers] == [
        layer.dtype_policy.name for layer in theirs.layers]
    tokens = np.abs(DENSE_X).astype("int32") % 10
    np.testing.assert_allclose(ours.predict(tokens, verbose=0),
                               np.asarray(theirs.predict(tokens, verbose=0)), rtol=1e-6)


def test_float8_gradient_outside_training_leaves_the_scales():
    """A gradient taken with training=False (Keras gives the scales no gradient)
    must not overwrite the delayed scales with zeros."""
    layer = loopax.layers.Dense(3)
    layer.build((None, 6))
    layer.quantize("float8")
    optimizer = loopax.optimizers.SGD(0.1)
    with loopax.GradientTape() as tape:
        loss = loopax.ops.sum(layer(DENSE_X, training=False))
    grads = tape.gradient(loss, layer.trainable_weights)
    optimizer.apply_gradients(zip(grads, layer.trainable_weights))
    assert float(layer.inputs_scale.value) == 1.0
    assert float(layer.kernel_scale.value) == 1.0
