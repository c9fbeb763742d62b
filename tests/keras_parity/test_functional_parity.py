"""Functional API details against Keras: `layer.input` / `layer.output`,
`model.input_shape` / `output_shape`, fit() of a model with no trainable
weights, and a (n, 1) target broadcast against a (n, k) output."""

import numpy as np
import pytest
from keras_reference import keras

import loopax

X = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
Y1 = np.random.default_rng(1).normal(size=(16, 1)).astype(np.float32)


def graph(lib):
    a = lib.Input((4,), name="a")
    b = lib.Input((2,), name="b")
    dense = lib.layers.Dense(3, name="dense")
    concat = lib.layers.Concatenate(name="concat")
    joined = concat([dense(a), b])
    dense(lib.Input((4,), name="c"))             # a second call: node 0 still answers
    model = lib.Model({"a": a, "b": b}, [joined, b])
    return model, dense, concat


def shapes(value):
    return [tuple(t.shape) for t in value] if isinstance(value, list) else tuple(value.shape)


def test_layer_input_and_output_follow_keras():
    model, dense, concat = graph(loopax)
    k_model, k_dense, k_concat = graph(keras)
    for ours, theirs in [(dense, k_dense), (concat, k_concat),
                         (model.layers[0], k_model.layers[0])]:
        assert shapes(ours.output) == shapes(theirs.output)
        assert type(ours.input) is type(theirs.input) or \
            isinstance(theirs.input, list) == isinstance(ours.input, list)
        assert shapes(ours.input) == shapes(theirs.input)
    assert model.input_shape == k_model.input_shape
    assert model.output_shape == k_model.output_shape
    assert dense.output is model.get_layer("concat").input[0]
    with pytest.raises(AttributeError, match="never been called"):
        loopax.layers.Dense(2).output
    with pytest.raises(AttributeError):
        keras.layers.Dense(2).output


def test_sequential_shapes_follow_keras():
    ours = loopax.Sequential([loopax.Input((4,)), loopax.layers.Dense(3)])
    theirs = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    assert (ours.input_shape, ours.output_shape) == (theirs.input_shape, theirs.output_shape)
    assert shapes(ours.layers[0].output) == shapes(theirs.layers[0].output)


def fit_history(lib, make, y, **compile_kwargs):
    lib.utils.set_random_seed(0)
    model = make(lib)
    model.compile(optimizer="sgd", **compile_kwargs)
    history = model.fit(X, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
    return model, history.history


def activation_only(lib):
    inputs = lib.Input((3,))
    return lib.Model(inputs, lib.layers.Activation("tanh")(inputs))


def frozen_dense(lib):
    inputs = lib.Input((3,))
    dense = lib.layers.Dense(3, kernel_initializer="ones", bias_initializer="ones")
    model = lib.Model(inputs, dense(inputs))
    dense.trainable = False
    return model


@pytest.mark.parametrize("make", [activation_only, frozen_dense])
def test_fit_without_trainable_weights_runs_metrics_only(make):
    target = np.tanh(X) + 0.1
    ours, ours_history = fit_history(loopax, make, target, loss="mse", metrics=["mae"])
    theirs, theirs_history = fit_history(keras, make, target, loss="mse", metrics=["mae"])
    assert ours_history.keys() == theirs_history.keys()
    for key in theirs_history:
        np.testing.assert_allclose(ours_history[key], theirs_history[key], rtol=1e-5)
    for w, k in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_array_equal(w, np.asarray(k))   # nothing moved
    assert int(ours.optimizer.iterations.value) == int(theirs.optimizer.iterations) == 0


def dense4(lib):
    inputs = lib.Input((3,))
    return lib.Model(inputs, lib.layers.Dense(4, kernel_initializer="ones")(inputs))


@pytest.mark.parametrize("loss", ["mse", "mae"])
def test_a_column_target_broadcasts_against_a_wide_output_as_in_keras(loss):
    ours, ours_history = fit_history(loopax, dense4, Y1, loss=loss, metrics=["mse"])
    theirs, theirs_history = fit_history(keras, dense4, Y1, loss=loss, metrics=["mse"])
    for key in theirs_history:
        np.testing.assert_allclose(ours_history[key], theirs_history[key], rtol=1e-5)
    for w, k in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(w, np.asarray(k), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        ours.evaluate(X, Y1, verbose=0), theirs.evaluate(X, Y1, verbose=0), rtol=1e-5)


def test_is_keras_tensor_and_get_source_inputs_follow_keras():
    def names(lib):
        a, b, c = (lib.Input((2,), name=n) for n in "abc")
        joined = lib.layers.Concatenate()([lib.layers.Dense(2)(b), a, b])
        return ([t.name for t in lib.utils.get_source_inputs(joined)],
                [t.name for t in lib.utils.get_source_inputs(c)],
                lib.utils.is_keras_tensor(joined), lib.utils.is_keras_tensor(np.ones(2)))
    assert names(loopax) == names(keras)
