"""The serialization API against Keras: Keras's `to_json()` read by
`loopax.models.model_from_json` predicts as Keras does; `serialize_keras_object`
and `get_build_config` give what Keras gives."""

import json

import numpy as np
import pytest
from keras_reference import keras

import loopax

X = np.random.default_rng(2).normal(size=(3, 6)).astype(np.float32)


def scaled_tanh_keras(x):
    return keras.ops.tanh(x) * 3.0


def scaled_tanh_loopax(x):
    return loopax.ops.tanh(x) * 3.0


keras.saving.register_keras_serializable(package="parity", name="scaled_tanh")(
    scaled_tanh_keras)
loopax.saving.register_keras_serializable(package="parity", name="scaled_tanh")(
    scaled_tanh_loopax)


def keras_functional():
    inputs = keras.Input((6,))
    h = keras.layers.Dense(5, activation=scaled_tanh_keras)(inputs)
    h = keras.layers.BatchNormalization()(keras.layers.Dropout(0.2)(h))
    return keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(h))


def keras_sequential():
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, activation="relu"),
                             keras.layers.Dense(1)])


@pytest.mark.parametrize("make", [keras_functional, keras_sequential])
def test_keras_to_json_is_read_by_model_from_json(make):
    keras_model = make()
    text = keras_model.to_json()
    model = loopax.models.model_from_json(text)
    assert [type(layer).__name__ for layer in model.layers] == \
        [type(layer).__name__ for layer in keras_model.layers]
    model.set_weights([np.asarray(w) for w in keras_model.get_weights()])
    np.testing.assert_allclose(model.predict(X, verbose=0), keras_model.predict(X, verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_keras_json_with_a_function_loopax_has_not_registered_is_refused():
    inputs = keras.Input((6,))
    model = keras.Model(inputs, keras.layers.Dense(2, activation=scaled_tanh_keras)(inputs))
    config = json.loads(model.to_json())
    config["config"]["layers"][1]["config"]["activation"]["config"] = "other>not_here"
    with pytest.raises(ValueError, match="not_here"):
        loopax.models.model_from_json(json.dumps(config))


def test_serialize_keras_object_agrees_with_keras():
    def core(entry):   # Keras adds "module" (and registered_name) keys loopax omits
        if isinstance(entry, dict):
            return {k: v for k, v in entry.items() if k not in ("module", "registered_name")}
        return entry
    assert core(loopax.saving.serialize_keras_object(scaled_tanh_loopax)) == \
        core(keras.saving.serialize_keras_object(scaled_tanh_keras))
    assert loopax.saving.serialize_keras_object(loopax.activations.relu)["config"] == \
        keras.saving.serialize_keras_object(keras.activations.relu)["config"]
    for value in ([1, 2, (3, 4)], "relu", 2.5, None, {"a": [1, None]}):
        assert loopax.saving.serialize_keras_object(value) == \
            keras.saving.serialize_keras_object(value)
    ours = loopax.layers.serialize(loopax.layers.Dense(3, activation=scaled_tanh_loopax))
    theirs = keras.layers.serialize(keras.layers.Dense(3, activation=scaled_tanh_keras))
    assert ours["class_name"] == theirs["class_name"]
    assert core(ours["config"]["activation"]) == core(theirs["config"]["activation"])
    # Keras's own dict (module keys, dtype policy) is read by loopax.layers.deserialize.
    layer = loopax.layers.deserialize(theirs)
    assert layer.units == 3 and layer.activation is scaled_tanh_loopax


@pytest.mark.parametrize("name, kwargs, shape", [
    ("Dense", {"units": 3}, (2, 6)),
    ("Conv1D", {"filters": 2, "kernel_size": 3}, (2, 8, 4)),
    ("LSTM", {"units": 2}, (2, 5, 3)),
], ids=["Dense", "Conv1D", "LSTM"])
def test_get_build_config_agrees_with_keras(name, kwargs, shape):
    keras_layer = getattr(keras.layers, name)(**kwargs)
    layer = getattr(loopax.layers, name)(**kwargs)
    assert layer.get_build_config() is None and keras_layer.get_build_config() is None
    keras_layer(np.zeros(shape, "float32"))
    layer(np.zeros(shape, "float32"))
    assert layer.get_build_config() == keras_layer.get_build_config()
    rebuilt = getattr(loopax.layers, name)(**kwargs)
    rebuilt.build_from_config(keras_layer.get_build_config())
    assert [tuple(w.shape) for w in rebuilt.weights] == \
        [tuple(w.shape) for w in keras_layer.weights]
