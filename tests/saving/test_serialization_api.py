"""The serialization API: to_json / model_from_json, layers.serialize /
deserialize, serialize_keras_object, registered functions in configs, and the
Layer hooks save/load honour (build config, own variables, assets). Keras
comparisons are in tests/keras_parity/test_serialization_parity.py."""

import json
import os
import sys

import numpy as np
import pytest

import loopax
from loopax import layers, ops
from loopax.saving import load_model, register_keras_serializable

X = np.random.default_rng(1).normal(size=(4, 6)).astype(np.float32)


@register_keras_serializable(package="ser_test")
def doubled_tanh(x):
    return ops.tanh(x) * 2.0


@register_keras_serializable(package="ser_test")
def half_mse(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred)) / 2.0


def unregistered_act(x):
    return x * 3.0


def small_model(activation=doubled_tanh):
    inputs = loopax.Input((6,))
    hidden = layers.Dense(5, activation=activation)(inputs)
    return loopax.Model(inputs, layers.Dense(2)(hidden))


def test_to_json_round_trip_keeps_registered_functions_and_compile_args():
    model = small_model()
    model.compile(optimizer="adam", loss=half_mse)
    text = model.to_json()
    config = json.loads(text)
    dense = config["config"]["layers"][1]["config"]
    assert dense["activation"] == {"class_name": "function", "config": "ser_test>doubled_tanh"}
    assert config["compile_config"]["loss"]["config"] == "ser_test>half_mse"
    assert json.loads(model.to_json(indent=2)) == config   # kwargs go to json.dumps

    clone = loopax.models.model_from_json(text)
    assert clone.layers[1].activation is doubled_tanh
    assert clone.compiled and clone.get_compile_config()["loss"] == config["compile_config"]["loss"]
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(X), model(X), rtol=1e-6)
    expected = np.tanh(X @ model.get_weights()[0] + model.get_weights()[1]) * 2.0
    expected = expected @ model.get_weights()[2] + model.get_weights()[3]
    np.testing.assert_allclose(clone(X), expected, rtol=1e-5, atol=1e-6)


def test_unregistered_function_saves_with_a_warning_and_loads_with_custom_objects():
    # Keras saves a module-level function by module and name (and fails to load it);
    # loopax saves it the same way, warning that loading needs custom_objects.
    model = small_model(activation=unregistered_act)
    with pytest.warns(UserWarning, match="register_serializable"):
        saved = model.to_json()
    with pytest.raises(ValueError, match="unregistered_act"):
        loopax.models.model_from_json(saved)
    # A config naming it (as Keras writes unregistered functions) needs custom_objects.
    text = small_model(activation="relu").to_json().replace('"relu"', '"unregistered_act"')
    with pytest.raises(ValueError, match="unregistered_act"):
        loopax.models.model_from_json(text)
    clone = loopax.models.model_from_json(text, custom_objects={"unregistered_act":
                                                                unregistered_act})
    assert clone.layers[1].activation is unregistered_act


@pytest.mark.parametrize("entry", [
    {"class_name": "function", "config": "os.system"},
    {"class_name": "system", "module": "os", "config": {}},
    {"class_name": "Popen", "registered_name": "subprocess>Popen", "config": {}},
    {"class_name": "evil_mod.Payload", "module": "evil_mod", "config": {}},
], ids=["os_system-function", "os_system-class", "subprocess_Popen-registered_name",
        "unknown-module-class"])
def test_model_from_json_never_runs_unregistered_code(entry, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = json.loads(small_model(activation="relu").to_json())
    config["config"]["layers"][1]["config"]["activation"] = entry
    with pytest.raises(ValueError, match="Unknown"):
        loopax.models.model_from_json(json.dumps(config))
    config["config"]["layers"][1] = {**entry, "name": "x", "inbound_nodes": []}
    with pytest.raises(ValueError, match="Unknown"):
        loopax.models.model_from_json(json.dumps(config))
    assert "evil_mod" not in sys.modules
    assert os.listdir(tmp_path) == []


def test_model_from_json_errors():
    with pytest.raises(ValueError, match="could not parse"):
        loopax.models.model_from_json("{not json")
    with pytest.raises(ValueError, match="does not describe a model"):
        loopax.models.model_from_json("[1, 2]")


def test_layers_serialize_deserialize():
    dense = layers.Dense(3, activation=doubled_tanh, name="d")
    dense(X)
    entry = layers.serialize(dense)
    assert entry["class_name"] == "Dense"
    assert entry["build_config"] == {"input_shape": (4, 6)}
    assert entry["config"]["activation"]["config"] == "ser_test>doubled_tanh"
    rebuilt = layers.deserialize(json.loads(json.dumps(entry)))
    assert type(rebuilt) is layers.Dense and rebuilt.built   # built from build_config
    assert rebuilt.kernel.shape == (6, 3) and rebuilt.activation is doubled_tanh
    with pytest.raises(TypeError, match="takes a layer"):
        layers.serialize(loopax.optimizers.Adam())
    with pytest.raises(ValueError, match="not a layer"):
        layers.deserialize(loopax.saving.serialize_keras_object(loopax.losses.Huber()))
    with pytest.raises(ValueError, match="class_name"):
        layers.deserialize("Dense")


def test_serialize_keras_object_of_plain_values_and_functions():
    ser = loopax.saving.serialize_keras_object
    assert ser([1, 2.5, (3, "a"), None]) == [1, 2.5, (3, "a"), None]
    assert ser({"a": loopax.activations.relu}) == {
        "a": {"class_name": "function", "config": "relu"}}
    assert ser(np.float32(1.5)) == 1.5
    assert loopax.saving.deserialize_keras_object(ser(doubled_tanh)) is doubled_tanh
    loss = loopax.saving.deserialize_keras_object(ser(loopax.losses.Huber(delta=0.5)))
    assert isinstance(loss, loopax.losses.Huber) and loss.get_config()["delta"] == 0.5


class Offset(layers.Layer):
    """Saves its weight shifted by 100 plus a call counter, through Keras's hooks."""

    def build(self, input_shape):
        self.offset = self.add_weight(shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        return x + self.offset

    def save_own_variables(self, store):
        store["shifted"] = np.asarray(self.offset.value) + 100.0
        store["note"] = np.array([7.0])

    def load_own_variables(self, store):
        assert float(store["note"][0]) == 7.0
        self.offset.assign(store["shifted"] - 100.0)


class Vocabulary(layers.Layer):
    """Keeps a word list in an asset file, not in a weight."""

    def __init__(self, words=(), **kwargs):
        super().__init__(**kwargs)
        self.words = list(words)

    def call(self, x):
        return x * len(self.words)

    def save_assets(self, directory):
        os.makedirs(os.path.join(directory, "sub"))
        with open(os.path.join(directory, "sub", "vocab.txt"), "w") as f:
            f.write("\n".join(self.words))

    def load_assets(self, directory):
        with open(os.path.join(directory, "sub", "vocab.txt")) as f:
            self.words = f.read().split("\n")


def test_save_and_load_honour_own_variables_and_assets(tmp_path):
    inputs = loopax.Input((6,))
    x = Offset(name="offset")(layers.Dense(6)(inputs))
    model = loopax.Model(inputs, Vocabulary(["a", "b", "c"], name="vocab")(x))
    model.get_layer("offset").offset.assign(np.arange(6, dtype=np.float32))
    custom = {"Offset": Offset, "Vocabulary": Vocabulary}
    model.save(tmp_path / "m.keras")
    loaded = load_model(tmp_path / "m.keras", custom_objects=custom)
    assert loaded.get_layer("vocab").words == ["a", "b", "c"]   # from the asset file
    np.testing.assert_array_equal(loaded.get_layer("offset").offset.value, np.arange(6))
    np.testing.assert_allclose(loaded(X), model(X), rtol=1e-6)
    # save_weights / load_weights go through the same hooks.
    model.save_weights(tmp_path / "w.weights.safetensors")
    other = loopax.models.clone_model(model, custom_objects=custom)
    other.load_weights(tmp_path / "w.weights.safetensors")
    np.testing.assert_array_equal(other.get_layer("offset").offset.value, np.arange(6))


def test_default_own_variable_hooks_round_trip_a_layer():
    dense = layers.Dense(3)
    dense(X)
    store = {}
    dense.save_own_variables(store)
    assert sorted(store) == ["0", "1"] and store["0"].shape == (6, 3)
    other = layers.Dense(3)
    other(X)
    other.load_own_variables(store)
    np.testing.assert_array_equal(other.kernel.value, dense.kernel.value)
    with pytest.raises(ValueError, match="2 weights of its own"):
        other.load_own_variables({"0": store["0"]})


def test_asset_entries_outside_their_folder_are_refused(tmp_path):
    import zipfile
    model = loopax.Sequential([loopax.Input((6,)), Vocabulary(["x"], name="vocab")])
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras", "a") as zf:
        zf.writestr("assets/vocabulary/__files__/../../evil.txt", "boom")
    with pytest.raises(ValueError, match="outside its folder"):
        load_model(tmp_path / "m.keras", custom_objects={"Vocabulary": Vocabulary})
    assert not (tmp_path / "evil.txt").exists()


def test_build_config_rebuilds_a_subclassed_model(tmp_path):
    @register_keras_serializable(package="ser_test")
    class Tower(loopax.Model):
        def __init__(self, units=3, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.dense = layers.Dense(units)

        def call(self, x):
            return self.dense(x)

    model = Tower(units=3)
    model(X)
    assert model.get_build_config() == {"input_shape": (4, 6)}
    model.save(tmp_path / "t.keras")
    loaded = load_model(tmp_path / "t.keras")
    np.testing.assert_allclose(loaded(X), model(X), rtol=1e-6)
