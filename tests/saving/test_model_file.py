"""model.save / load_model: config + safetensors in a zip; a file never runs code."""

import json
import sys
import zipfile

import numpy as np
import pytest
import safetensors

import loopax
from loopax.layers import BatchNormalization, Dense, Dropout, Layer
from loopax.models import Model, Sequential
from loopax.saving import load_model, register_serializable

X = np.random.default_rng(4).normal(size=(4, 6)).astype(np.float32)


def perturb(model):
    model.set_weights([w + np.random.default_rng(i).normal(size=w.shape).astype(w.dtype)
                       for i, w in enumerate(model.get_weights())])


def test_functional_round_trip(tmp_path):
    a = loopax.Input(shape=(6,), name="a")
    b = loopax.Input(shape=(2,), name="b")
    h = BatchNormalization()(Dense(4, activation="tanh")(a))
    out = Dense(1)(loopax.layers.Concatenate()([Dropout(0.3)(h), b]))
    model = Model({"a": a, "b": b}, out, name="two_inputs")
    perturb(model)
    model.save(tmp_path / "model.keras")
    loaded = load_model(tmp_path / "model.keras")
    data = {"a": X, "b": X[:, :2]}
    assert loaded.name == "two_inputs" and loaded.input_names == ["a", "b"]
    np.testing.assert_array_equal(loaded(data), model(data))
    assert loopax.models.load_model is load_model


def test_sequential_round_trip(tmp_path):
    model = Sequential([Dense(3, activation="relu"), Dense(2)])
    model(X)
    perturb(model)
    model.save(tmp_path / "seq.loopax")
    loaded = load_model(tmp_path / "seq.loopax")
    assert isinstance(loaded, Sequential) and len(loaded.layers) == 2
    np.testing.assert_array_equal(loaded(X), model(X))


class Scale(Layer):
    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.gain = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gain")

    def call(self, x):
        return x * self.gain * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@register_serializable(package="tests")
class Tower(Model):
    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.dense = Dense(units)

    def call(self, x):
        return self.dense(x)


def test_custom_layer_needs_custom_objects(tmp_path):
    x = loopax.Input(shape=(6,))
    model = Model(x, Scale(2.0, name="scale")(x))
    perturb(model)
    model.save(tmp_path / "m.keras")
    with pytest.raises(ValueError, match=r"Unknown class or function 'Scale'.*custom_objects"):
        load_model(tmp_path / "m.keras")
    loaded = load_model(tmp_path / "m.keras", custom_objects={"Scale": Scale})
    assert loaded.get_layer("scale").factor == 2.0
    np.testing.assert_array_equal(loaded(X), model(X))


def test_registered_subclassed_model_round_trip(tmp_path):
    model = Tower(units=4, name="tower")
    model(X)
    perturb(model)
    model.save(tmp_path / "tower.keras")
    loaded = load_model(tmp_path / "tower.keras")
    assert type(loaded) is Tower and loaded.units == 4 and loaded.name == "tower"
    np.testing.assert_array_equal(loaded(X), model(X))


def write_model_file(path, config):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("metadata.json", "{}")
        zf.writestr("model.weights.safetensors", b"")


@pytest.mark.parametrize("config", [
    {"class_name": "Popen", "registered_name": "subprocess>Popen",
     "module": "subprocess", "config": {"args": ["touch", "PWNED"]}},
    {"class_name": "loopax_evil_module.Payload", "module": "loopax_evil_module", "config": {}},
    {"class_name": "function", "config": "os.system"},
    {"class_name": "Sequential", "config": {"name": "s", "layers": [
        {"class_name": "eval", "module": "builtins", "config": {"source": "1/0"}}]}},
], ids=["subprocess_Popen", "unknown-module-class", "os_system-function",
        "builtins_eval-nested-layer"])
def test_a_file_naming_unregistered_classes_is_refused_without_running_code(
        tmp_path, monkeypatch, config):
    monkeypatch.chdir(tmp_path)
    write_model_file(tmp_path / "evil.keras", config)
    with pytest.raises(ValueError, match="Unknown class or function") as e:
        load_model(tmp_path / "evil.keras")
    assert "never imports" in str(e.value)
    assert "loopax_evil_module" not in sys.modules
    assert not (tmp_path / "PWNED").exists()


def test_not_a_model_file(tmp_path):
    model = Sequential([loopax.Input(shape=(6,)), Dense(2)])
    model.save_weights(tmp_path / "w.safetensors")
    with pytest.raises(ValueError, match="not a model file"):
        load_model(tmp_path / "w.safetensors")
    with zipfile.ZipFile(tmp_path / "keras3.keras", "w") as zf:
        zf.writestr("config.json", "{}")
        zf.writestr("model.weights.h5", b"")
    with pytest.raises(ValueError, match="Keras file"):
        load_model(tmp_path / "keras3.keras")
    model.save(tmp_path / "whole.keras")
    other = Sequential([loopax.Input(shape=(6,)), Dense(2)])
    other.load_weights(tmp_path / "whole.keras")   # weights out of a whole-model file
    np.testing.assert_array_equal(other(X), model(X))


class CustomModel(Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

    def train_step(self, data):
        return "custom"


def test_functional_subclass_round_trip(tmp_path):
    x = loopax.Input(shape=(6,))
    model = CustomModel(x, Dense(2)(x))
    model.save(tmp_path / "custom.keras")
    loaded = load_model(tmp_path / "custom.keras", custom_objects={"CustomModel": CustomModel})
    assert isinstance(loaded, CustomModel) and loaded.train_step(None) == "custom"
    np.testing.assert_array_equal(loaded(X), model(X))


def _compiled_classifier(**compile_kwargs):
    model = Sequential([loopax.Input((6,)), Dense(4, activation="relu"), Dense(3)])
    model.compile(**compile_kwargs)
    return model


LABELS = np.array([0, 1, 2, 1])


@pytest.mark.parametrize("compile_kwargs, y", [
    (dict(optimizer=loopax.optimizers.Adam(learning_rate=0.01),
          loss=loopax.losses.SparseCategoricalCrossentropy(from_logits=True),
          metrics=["accuracy", loopax.metrics.SparseTopKCategoricalAccuracy(k=2)]), LABELS),
    (dict(optimizer="sgd", loss="mse", metrics=[loopax.metrics.mean_absolute_error],
          weighted_metrics=["mse"], loss_weights=0.5), np.eye(3, dtype=np.float32)[LABELS]),
], ids=["objects", "names_and_functions"])
def test_load_model_restores_the_compiled_state(tmp_path, compile_kwargs, y):
    model = _compiled_classifier(**compile_kwargs)
    model.fit(X, y, epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = load_model(tmp_path / "m.keras")
    assert loaded.compiled
    assert type(loaded.optimizer) is type(model.optimizer)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    expected = model.evaluate(X, y, verbose=0, return_dict=True)
    got = loaded.evaluate(X, y, verbose=0, return_dict=True)
    assert got.keys() == expected.keys()
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-6, err_msg=key)
    history = loaded.fit(X, y, epochs=2, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]


def test_load_model_compile_false_leaves_it_uncompiled(tmp_path):
    model = _compiled_classifier(optimizer="adam", loss="mse")
    model.save(tmp_path / "m.keras")
    assert not load_model(tmp_path / "m.keras", compile=False).compiled
    assert load_model(tmp_path / "m.keras").compiled


def test_save_refuses_arguments_it_would_ignore(tmp_path):
    model = _compiled_classifier(optimizer="adam", loss="mse")
    with pytest.raises(TypeError, match="save_format"):
        model.save(tmp_path / "m.keras", save_format="h5")
    with pytest.raises(ValueError, match="zipped=False"):
        model.save(tmp_path / "m.keras", zipped=False)


# ---- include_optimizer: load_model + fit continues exactly ------------------------

def _dropout_model():
    loopax.utils.set_random_seed(11)
    model = loopax.Sequential([loopax.Input((5,)), loopax.layers.Dense(8, activation="relu"),
                               loopax.layers.Dropout(0.3), loopax.layers.Dense(1)])
    model.compile(optimizer=loopax.optimizers.Adam(0.01), loss="mse")
    return model


@pytest.mark.parametrize("include_optimizer", [True, False])
def test_loaded_model_continues_training_like_the_saved_one(tmp_path, include_optimizer):
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(48, 5)).astype("float32"), rng.normal(size=(48, 1)).astype("float32")
    # Uninterrupted: fit, then fit again in memory.
    kept = _dropout_model()
    kept.fit(x, y, batch_size=8, epochs=2, verbose=0)
    loopax.utils.set_random_seed(99)   # the second fit's shuffle seed
    expected = kept.fit(x, y, batch_size=8, epochs=2, verbose=0).history
    # Saved after the first fit and loaded in its place.
    first = _dropout_model()
    first.fit(x, y, batch_size=8, epochs=2, verbose=0)
    first.save(tmp_path / "m.loopax", include_optimizer=include_optimizer)
    loaded = loopax.saving.load_model(tmp_path / "m.loopax")
    loopax.utils.set_random_seed(99)
    history = loaded.fit(x, y, batch_size=8, epochs=2, verbose=0).history
    same = history == expected and all(
        np.array_equal(a, b) for a, b in zip(loaded.get_weights(), kept.get_weights()))
    # Without the optimizer state (fresh Adam moments, step 0) training differs.
    assert same is include_optimizer
    if include_optimizer:
        for a, b in zip(loaded.optimizer.variables, kept.optimizer.variables, strict=True):
            np.testing.assert_array_equal(np.asarray(a.value), np.asarray(b.value))


def test_training_state_holds_arrays_only_and_is_skipped_without_compile(tmp_path):
    model = _dropout_model()
    model.fit(np.ones((8, 5), "float32"), np.ones((8, 1), "float32"), epochs=1, verbose=0)
    model.save(tmp_path / "m.loopax")
    with zipfile.ZipFile(tmp_path / "m.loopax") as zf:
        names = zf.namelist()
        state = safetensors.deserialize(zf.read("training_state.safetensors"))
    assert "training_state.safetensors" in names
    keys = {key for key, _ in state}
    assert "optimizer/0000" in keys   # iterations
    assert any(k.startswith("seed/") and k.endswith("seed_generator_state") for k in keys)
    loaded = loopax.saving.load_model(tmp_path / "m.loopax", compile=False)
    assert not loaded.compiled


def _entry_compression(path):
    with zipfile.ZipFile(path) as zf:
        return {info.filename: info.compress_type for info in zf.infolist()}


def test_weights_are_stored_not_deflated_as_keras_unless_compress(tmp_path):
    keras = pytest.importorskip("keras")
    k_model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(64), keras.layers.Dense(2)])
    k_model.compile(optimizer="adam", loss="mse")
    k_model.save(tmp_path / "k.keras")
    # Keras stores its weights entry as it is (no deflate).
    assert _entry_compression(tmp_path / "k.keras")["model.weights.h5"] == zipfile.ZIP_STORED

    model = Sequential([loopax.Input((6,)), Dense(64), Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(X, X[:, :2], epochs=1, verbose=0)
    model.save(tmp_path / "stored.keras")
    model.save(tmp_path / "deflated.keras", compress=True)
    stored = _entry_compression(tmp_path / "stored.keras")
    deflated = _entry_compression(tmp_path / "deflated.keras")
    arrays = ["model.weights.safetensors", "training_state.safetensors"]
    assert [stored[n] for n in arrays] == [zipfile.ZIP_STORED] * 2
    assert [deflated[n] for n in arrays] == [zipfile.ZIP_DEFLATED] * 2
    assert (tmp_path / "deflated.keras").stat().st_size < (tmp_path / "stored.keras").stat().st_size
    want = np.asarray(model(X))
    for name in ("stored.keras", "deflated.keras"):   # deflated: as loopax wrote until now
        loaded = load_model(tmp_path / name)
        np.testing.assert_array_equal(np.asarray(loaded(X)), want)
        for ours, saved in zip(loaded.optimizer.variables, model.optimizer.variables):
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(saved))
    loopax.saving.save_model(model, tmp_path / "api.keras", compress=True)
    assert _entry_compression(tmp_path / "api.keras")[arrays[0]] == zipfile.ZIP_DEFLATED
