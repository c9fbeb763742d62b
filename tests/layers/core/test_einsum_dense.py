"""EinsumDense against Keras 3.15's (outputs and gradients, Keras's weights
copied in), its initializer fans, config and saving round trips, and its
errors."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "keras_parity"))
# keras_reference skips this module without Keras.
from keras_reference import assert_close, build_pair, evaluate_pair, keras

import loopax
from loopax import layers

rng = np.random.default_rng(3)


def normal(*shape):
    return rng.standard_normal(shape).astype("float32")


EQUATIONS = [
    pytest.param("ab,bc->ac", 4, "c", (3, 5), id="dense"),
    pytest.param("abc,cd->abd", (None, 4), "d", (2, 7, 3), id="sequence"),
    pytest.param("abc,cde->abde", (None, 2, 4), "de", (2, 7, 3), id="heads-bias_de"),
    pytest.param("abc,cd->abd", (7, 4), "bd", (2, 7, 3), id="bias_over_time"),
    pytest.param("...b,bc->...c", 4, "c", (2, 6, 5, 3), id="leading_ellipsis"),
    pytest.param("...b,bc->...c", 4, None, (1, 5), id="leading_ellipsis-batch_of_1-no_bias"),
    pytest.param("ab...,bc->ac...", 4, "c", (2, 6, 5, 3), id="trailing_ellipsis"),
    pytest.param("abcd,cde->abe", (None, 3), "e", (2, 4, 5, 2), id="two_contracted_axes"),
]


@pytest.mark.parametrize("equation, output_shape, bias_axes, shape", EQUATIONS)
def test_outputs_and_gradients_match_keras(equation, output_shape, bias_axes, shape):
    kwargs = {"equation": equation, "output_shape": output_shape, "bias_axes": bias_axes,
              "activation": "tanh"}
    x = normal(*shape)
    pair = build_pair("EinsumDense", kwargs, (x,))       # checks weight names and shapes
    (k_out, _, k_grads), (l_out, _, l_grads) = evaluate_pair(pair, (x,), {})
    assert_close(l_out, k_out, 1e-5, 1e-5, f"{equation} output")
    assert_close(l_grads, k_grads, 1e-5, 1e-5, f"{equation} gradients (kernel, bias, input)")
    eager = pair[1](x)
    assert_close(eager, k_out, 1e-5, 1e-5, f"{equation} eager call")


def test_symbolic_shapes():
    cases = [("abc,cd->abd", (None, 4), (7, 3), (None, 7, 4)),
             ("ab...,bc->ac...", 4, (6, 5, 3), (None, 4, 5, 3)),
             ("...b,bc->...c", 4, (None, 3), (None, None, 4))]
    for equation, output_shape, input_shape, expected in cases:
        layer = layers.EinsumDense(equation, output_shape)
        assert layer(loopax.Input(input_shape)).shape == expected
        # Keras keeps output_shape's None where loopax traces the size.
        keras_shape = keras.layers.EinsumDense(equation, output_shape)(
            keras.Input(input_shape)).shape
        assert all(k in (None, e) for k, e in zip(keras_shape, expected, strict=True))
    # Two leading axes under the ellipsis: loopax keeps their order (Keras 3.15's
    # symbolic shape swaps them, though its eager output has them in order).
    layer = layers.EinsumDense("...b,bc->...c", 4)
    assert layer(loopax.Input((6, 5, 3))).shape == (None, 6, 5, 4)
    assert layer.compute_output_shape((None, 6, 5, 3)) == (None, 6, 5, 4)


def test_kernel_initializer_counts_fans_over_the_equations_axes():
    # "abc,cde->abde": fan_in = c = 8, fan_out = d·e = 24, as Keras; the
    # (*window, in, out) rule would give fans 32 and 48 (limit 0.27).
    limit = np.sqrt(6 / (8 + 24))
    for module in (loopax, keras):
        layer = module.layers.EinsumDense("abc,cde->abde", (None, 4, 6))
        layer.build((None, 3, 8))
        kernel = np.abs(np.asarray(layer.kernel))
        assert limit * 0.8 < kernel.max() <= limit, module.__name__
    config = layers.EinsumDense("abc,cde->abde", (None, 4, 6)).get_config()
    assert config["kernel_initializer"]["config"] == {"seed": None}   # the argument, as given


def test_config_and_saving_round_trip(tmp_path):
    layer = layers.EinsumDense("abc,cde->abde", (None, 2, 4), activation="relu",
                               bias_axes="de", kernel_regularizer="l2",
                               bias_initializer="ones", kernel_constraint="max_norm")
    x = normal(2, 7, 3)
    out = layer(x)
    config = layer.get_config()
    assert config["output_shape"] == (None, 2, 4) and config["bias_axes"] == "de"
    clone = layers.EinsumDense.from_config(config)
    assert clone.get_config() == config
    clone(x)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(x), out, rtol=1e-6)
    rebuilt = layers.deserialize(layers.serialize(layer))
    assert rebuilt.get_config() == config

    model = loopax.Sequential([loopax.Input((7, 3)),
                               layers.EinsumDense("abc,cd->abd", (None, 5), bias_axes="d"),
                               layers.EinsumDense("...b,bc->...c", 2)])
    model.save(tmp_path / "einsum.keras")
    loaded = loopax.saving.load_model(tmp_path / "einsum.keras")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


def test_keras_file_with_einsum_dense_loads(tmp_path):
    inputs = keras.Input((7, 3))
    outputs = keras.layers.EinsumDense("abc,cde->abde", (None, 2, 4), bias_axes="de")(inputs)
    keras_model = keras.Model(inputs, outputs)
    keras_model.set_weights([normal(*w.shape) for w in keras_model.get_weights()])
    keras_model.save(tmp_path / "k.keras")
    model = loopax.saving.load_model(tmp_path / "k.keras")
    x = normal(2, 7, 3)
    np.testing.assert_allclose(model(x), keras_model(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("equation, bias_axes, match", [
    ("ab,bc", None, "must have the form"),
    ("...ab,bc->ac", None, "must have the form"),
    ("a...,bc->ac...", None, "must have the form"),      # too few letters before the "..."
    ("ab,bc->ad", None, "output axis 'd'"),
    ("ab,bcx->ac", None, "kernel axis 'x'"),
    ("ab,bc->ac", "b", "bias axis 'b'"),
], ids=["no_output", "ellipsis_on_one_side", "short_trailing_ellipsis", "unknown_output_axis",
        "kernel_axis_nowhere_else", "bias_axis_not_in_output"])
def test_bad_equations_are_refused(equation, bias_axes, match):
    with pytest.raises(ValueError, match=match):
        layers.EinsumDense(equation, 4, bias_axes=bias_axes)


def test_shapes_that_do_not_fit_the_equation_are_refused():
    x3 = normal(2, 7, 3)
    with pytest.raises(ValueError, match=r"one size \(or None\) per output axis 'bd'"):
        layers.EinsumDense("abc,cd->abd", 4)(x3)
    with pytest.raises(ValueError, match="needs an input of rank 2"):
        layers.EinsumDense("ab,bc->ac", 4)(x3)
    with pytest.raises(ValueError, match="axis 'b' has size 7 in the input"):
        layers.EinsumDense("abc,cd->abd", (5, 4))(x3)
    with pytest.raises(ValueError, match="size of kernel axis 'c' is unknown"):
        layers.EinsumDense("ab,bc->ac", (None,))(normal(2, 3))
    layer = layers.EinsumDense("abc,cd->abd", (None, 4))
    layer(x3)
    with pytest.raises(ValueError, match="size 3 on axis 2"):
        layer(normal(2, 7, 5))
