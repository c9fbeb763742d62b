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


# ---- objects in get_compile_config() and get_config(), saved as Keras saves them ----

def _compile_config_script(lib, package):
    """The "customizing saving" guide: a Model subclass whose compile config holds
    the optimizer name, a registered loss function and metrics (names and a
    registered function), re-compiled by its compile_from_config on loading."""
    ops = lib.ops

    def small_square_sum_loss(y_true, y_pred):
        return ops.sum(ops.square(y_pred - y_true) / 10.0, axis=1)

    def mean_pred(y_true, y_pred):
        return ops.mean(y_pred)

    register = lib.saving.register_keras_serializable(package=package)
    small_square_sum_loss, mean_pred = register(small_square_sum_loss), register(mean_pred)

    @register
    class CustomModel(lib.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = lib.layers.Dense(2)

        def call(self, inputs):
            return self.dense(inputs)

        def compile(self, optimizer, loss_fn, metrics):
            super().compile(optimizer=optimizer, loss=loss_fn, metrics=metrics)
            self.model_optimizer, self.loss_fn, self.loss_metrics = optimizer, loss_fn, metrics

        def get_compile_config(self):
            return {"model_optimizer": self.model_optimizer, "loss_fn": self.loss_fn,
                    "metric": self.loss_metrics}

        def compile_from_config(self, config):
            load = lib.utils.deserialize_keras_object
            self.compile(optimizer=load(config["model_optimizer"]),
                         loss_fn=load(config["loss_fn"]), metrics=load(config["metric"]))

    model = CustomModel()
    model.compile(optimizer="adam", loss_fn=small_square_sum_loss,
                  metrics=["mae", mean_pred])
    model(X[:, :4])
    return model, (small_square_sum_loss, mean_pred)


def _without_keras_keys(entry):
    if isinstance(entry, dict):
        return {k: _without_keras_keys(v) for k, v in entry.items()
                if k not in ("module", "registered_name")}
    if isinstance(entry, list):
        return [_without_keras_keys(v) for v in entry]
    return entry


def _saved_config(path):
    import zipfile
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read("config.json"))


def test_compile_config_with_registered_objects_round_trips_as_keras(tmp_path):
    k_model, k_fns = _compile_config_script(keras, "i38_compile")
    l_model, l_fns = _compile_config_script(loopax, "i38_compile")
    l_model.set_weights(k_model.get_weights())
    k_model.save(tmp_path / "k.keras")
    l_model.save(tmp_path / "l.keras")
    k_saved = _saved_config(tmp_path / "k.keras")["compile_config"]
    l_saved = _saved_config(tmp_path / "l.keras")["compile_config"]
    assert l_saved == _without_keras_keys(k_saved) == {
        "model_optimizer": "adam",
        "loss_fn": {"class_name": "function", "config": "i38_compile>small_square_sum_loss"},
        "metric": ["mae", {"class_name": "function", "config": "i38_compile>mean_pred"}]}
    k_loaded = keras.models.load_model(tmp_path / "k.keras")
    l_loaded = loopax.models.load_model(tmp_path / "l.keras")
    assert k_loaded.model_optimizer == l_loaded.model_optimizer == "adam"
    assert k_loaded.loss_fn is k_fns[0] and l_loaded.loss_fn is l_fns[0]
    assert l_loaded.loss_metrics == ["mae", l_fns[1]]
    y = X[:, :2]
    np.testing.assert_allclose(
        l_loaded.evaluate(X[:, :4], y, verbose=0, return_dict=True)["loss"],
        k_loaded.evaluate(X[:, :4], y, verbose=0, return_dict=True)["loss"], rtol=1e-5)
    assert sorted(l_loaded.evaluate(X[:, :4], y, verbose=0, return_dict=True)) == \
        sorted(k_loaded.evaluate(X[:, :4], y, verbose=0, return_dict=True))


def _function_in_config_model(lib, package):
    """A registered custom layer whose get_config() holds a registered function
    (saved by its name; its from_config deserializes it, as Keras requires)."""
    ops = lib.ops

    @lib.saving.register_keras_serializable(package=package)
    def scaled_relu(x):
        return ops.relu(x) * 2.0

    @lib.saving.register_keras_serializable(package=package)
    class FnDense(lib.layers.Layer):
        def __init__(self, units, fn, **kwargs):
            super().__init__(**kwargs)
            self.units, self.fn = units, fn

        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1], self.units))

        def call(self, x):
            return self.fn(ops.matmul(x, self.w))

        def get_config(self):
            return {**super().get_config(), "units": self.units, "fn": self.fn}

        @classmethod
        def from_config(cls, config):
            config["fn"] = lib.saving.deserialize_keras_object(config["fn"])
            return cls(**config)

    inputs = lib.Input((6,))
    return lib.Model(inputs, FnDense(3, scaled_relu)(inputs))


def test_model_whose_config_holds_a_registered_function_saves_as_keras(tmp_path):
    k_model = _function_in_config_model(keras, "i38_fn")
    l_model = _function_in_config_model(loopax, "i38_fn")
    l_model.set_weights(k_model.get_weights())
    k_model.save(tmp_path / "k.keras")
    l_model.save(tmp_path / "l.keras")
    k_entry = _saved_config(tmp_path / "k.keras")["config"]["layers"][1]["config"]["fn"]
    l_entry = _saved_config(tmp_path / "l.keras")["config"]["layers"][1]["config"]["fn"]
    assert l_entry == _without_keras_keys(k_entry) == {"class_name": "function",
                                                       "config": "i38_fn>scaled_relu"}
    want = np.asarray(keras.models.load_model(tmp_path / "k.keras")(X))
    np.testing.assert_allclose(np.asarray(loopax.models.load_model(tmp_path / "l.keras")(X)),
                               want, rtol=1e-6)
    np.testing.assert_allclose(want, np.maximum(X @ k_model.get_weights()[0], 0) * 2, rtol=1e-5)
