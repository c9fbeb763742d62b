"""Keras 3 `.keras` / `.weights.h5` files: they load and predict as in Keras,
and malicious variants are refused without running or writing anything.

Parity tests write their files with Keras itself (skipped without keras);
threat tests build the files by hand with zipfile and h5py.
"""

import base64
import io
import json
import marshal
import os
import struct
import zipfile

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

import loopax  # noqa: E402
from loopax.layers import Dense, Layer  # noqa: E402
from loopax.saving import load_model  # noqa: E402

RNG = np.random.default_rng(10)


def keras_or_skip():
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "jax":
        pytest.skip("the Keras reference runs on its JAX backend")
    return keras


def randomize(keras_model):
    """Non-trivial values everywhere (BN moving statistics too), positive
    where a variance must be."""
    keras_model.set_weights([np.abs(RNG.normal(size=w.shape)).astype(w.dtype) + 0.5
                             if w.ndim == 1 else RNG.normal(size=w.shape).astype(w.dtype)
                             for w in keras_model.get_weights()])


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder)
                  for d, _, fs in os.walk(folder) for f in fs)


# --------------------------------------------------------------------------
# Parity with Keras
# --------------------------------------------------------------------------

def two_tower_model(lib):
    """An image tower and a token tower joined: every layer family loopax
    maps, written once for Keras and once for loopax (`lib`)."""
    L = lib.layers
    image = lib.Input((8, 8, 3), name="image")
    tokens = lib.Input((6,), dtype="int32", name="tokens")
    x = L.Conv2D(4, 3, activation="relu", kernel_regularizer=lib.regularizers.L2(0.02),
                 kernel_constraint="max_norm")(image)
    x = L.Flatten()(L.Dropout(0.3)(L.MaxPooling2D()(L.BatchNormalization()(x))))
    e = L.Embedding(10, 8)(tokens)
    e = L.MultiHeadAttention(num_heads=2, key_dim=4)(e, e)
    e = L.GlobalMaxPooling1D()(L.AveragePooling1D(2)(L.Conv1D(8, 3, padding="same")(e)))
    inner = lib.Sequential([L.Dense(5, activation="gelu"), L.BatchNormalization(center=False)],
                           name="inner")
    h = inner(L.Concatenate()([x, e]))
    h = L.Flatten()(L.Reshape((5, 1))(h))
    # Two same-shaped Dense branches: swapped weights would not change any shape.
    branch_a = L.Dense(3, kernel_initializer=lib.initializers.GlorotNormal(seed=1))(h)
    branch_b = L.Dense(3, activation="tanh", use_bias=False)(h)
    out = L.Activation("softmax")(L.LayerNormalization()(L.Add()([branch_a, branch_b])))
    return lib.Model({"image": image, "tokens": tokens}, out, name="two_towers")


@pytest.fixture(scope="module")
def keras_two_towers(tmp_path_factory):
    """(folder with two_towers.keras and two_towers.weights.h5, data, Keras's output)."""
    keras = keras_or_skip()
    folder = tmp_path_factory.mktemp("keras_files")
    keras.utils.clear_session()   # layer names (conv2d, dropout...) restart from zero
    keras_model = two_tower_model(keras)
    randomize(keras_model)
    keras_model.save(folder / "two_towers.keras")
    keras_model.save_weights(folder / "two_towers.weights.h5")
    data = {"image": RNG.normal(size=(4, 8, 8, 3)).astype(np.float32),
            "tokens": RNG.integers(0, 10, size=(4, 6)).astype(np.int32)}
    return folder, data, np.asarray(keras_model(data))


def test_keras_file_predicts_like_keras(keras_two_towers):
    folder, data, expected = keras_two_towers
    model = load_model(folder / "two_towers.keras")
    np.testing.assert_allclose(model(data), expected, rtol=1e-5, atol=1e-6)
    assert model.name == "two_towers" and model.input_names == ["image", "tokens"]
    conv = model.get_layer("conv2d")
    assert isinstance(conv, loopax.layers.Conv2D)
    assert isinstance(conv.kernel_regularizer, loopax.regularizers.L2)
    assert np.isclose(conv.kernel_regularizer.l2, 0.02)
    assert isinstance(conv.kernel.constraint, loopax.constraints.MaxNorm)
    assert model.get_layer("dropout").rate == 0.3
    assert isinstance(model.get_layer("inner"), loopax.Sequential)


def test_keras_weights_h5_into_a_loopax_model_written_by_hand(keras_two_towers):
    folder, data, expected = keras_two_towers
    model = two_tower_model(loopax)
    model.load_weights(folder / "two_towers.weights.h5")
    np.testing.assert_allclose(model(data), expected, rtol=1e-5, atol=1e-6)
    twin = two_tower_model(loopax)
    twin.load_weights(folder / "two_towers.keras")     # the weights inside a .keras file
    np.testing.assert_allclose(twin(data), expected, rtol=1e-5, atol=1e-6)


def test_sequential_weights_h5_into_an_equivalent_model_and_mismatches(tmp_path):
    keras = keras_or_skip()
    keras_model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation="relu"),
                                    keras.layers.Dense(2)])
    randomize(keras_model)
    keras_model.save_weights(tmp_path / "mlp.weights.h5")
    data = RNG.normal(size=(3, 5)).astype(np.float32)

    model = loopax.Sequential([loopax.Input((5,)), Dense(4, activation="relu"), Dense(2)])
    model.load_weights(tmp_path / "mlp.weights.h5")
    np.testing.assert_allclose(model(data), keras_model(data), rtol=1e-6, atol=1e-6)
    keras_model.compile(optimizer="adam", loss="mse")
    keras_model.save(tmp_path / "mlp.keras")
    with pytest.warns(UserWarning, match="compile\\(\\) arguments are not restored"):
        loaded = load_model(tmp_path / "mlp.keras")
    assert isinstance(loaded, loopax.Sequential)
    np.testing.assert_allclose(loaded(data), keras_model(data), rtol=1e-6, atol=1e-6)

    wider = loopax.Sequential([loopax.Input((5,)), Dense(6), Dense(2)])
    before = wider.get_weights()
    with pytest.raises(ValueError, match=r"layers/dense/vars/0 for layers/dense \('dense(_\d+)?'\)"
                       r": file \(5, 4\), model \(5, 6\)"):
        wider.load_weights(tmp_path / "mlp.weights.h5")
    for got, want in zip(wider.get_weights(), before):   # nothing half-loaded
        np.testing.assert_array_equal(got, want)
    deeper = loopax.Sequential([loopax.Input((5,)), Dense(4), Dense(2), Dense(1)])
    with pytest.raises(ValueError, match=r"missing from the file: layers/dense_2/vars/0"):
        deeper.load_weights(tmp_path / "mlp.weights.h5")
    shallow = loopax.Sequential([loopax.Input((5,)), Dense(4)])
    with pytest.raises(ValueError, match=r"not in the model: layers/dense_1/vars/0"):
        shallow.load_weights(tmp_path / "mlp.weights.h5")


class LoopaxScale(Layer):
    """The loopax twin of the Keras custom layer below: x * gain * factor."""

    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.gain = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gain")

    def call(self, x):
        return x * self.gain * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def test_custom_keras_layer_needs_a_registered_loopax_class(tmp_path):
    keras = keras_or_skip()

    @keras.saving.register_keras_serializable(package="demo")
    class Scale(keras.layers.Layer):
        def __init__(self, factor=1.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def build(self, input_shape):
            self.gain = self.add_weight(shape=(input_shape[-1],), initializer="ones",
                                        name="gain")

        def call(self, x):
            return x * self.gain * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    inputs = keras.Input((4,))
    keras_model = keras.Model(inputs, Scale(3.0)(keras.layers.Dense(4)(inputs)))
    randomize(keras_model)
    keras_model.save(tmp_path / "custom.keras")
    with pytest.raises(ValueError, match=r"'demo>Scale'.*custom_objects=\{'demo>Scale'"):
        load_model(tmp_path / "custom.keras")
    model = load_model(tmp_path / "custom.keras", custom_objects={"demo>Scale": LoopaxScale})
    data = RNG.normal(size=(2, 4)).astype(np.float32)
    np.testing.assert_allclose(model(data), keras_model(data), rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------
# Threats: hand-made files in Keras's format
# --------------------------------------------------------------------------

def dense_entry(name, units, activation="linear", **extra):
    return {"module": "keras.layers", "class_name": "Dense", "registered_name": None,
            "config": {"name": name, "units": units, "activation": activation, **extra}}


def sequential_config(*layers):
    return {"module": "keras", "class_name": "Sequential", "registered_name": None,
            "config": {"name": "sequential", "layers": [
                {"module": "keras.layers", "class_name": "InputLayer", "registered_name": None,
                 "config": {"batch_shape": [None, 5], "dtype": "float32", "name": "in"}},
                *layers]}}


def mlp_weights_h5(path_or_file, shapes=((5, 4), (4,), (4, 2), (2,)), edit=None):
    """Keras's layout for Sequential([Dense(4), Dense(2)]) on 5 features."""
    with h5py.File(path_or_file, "w") as h:
        h.create_group("vars")
        for i, layer in enumerate(["dense", "dense_1"]):
            group = h.create_group(f"layers/{layer}/vars")
            for j in range(2):
                group[str(j)] = RNG.normal(size=shapes[2 * i + j]).astype(np.float32)
        if edit is not None:
            edit(h)


def write_keras_file(path, config, weights=None, extra=()):
    if weights is None:
        buffer = io.BytesIO()
        mlp_weights_h5(buffer)
        weights = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", weights)
        for name, data in extra:
            zf.writestr(name, data)


MLP = sequential_config(dense_entry("dense", 4, "relu"), dense_entry("dense_1", 2))


def test_hand_made_keras_file_loads(tmp_path):
    """The threat tests' baseline: the same file without the payload loads."""
    write_keras_file(tmp_path / "ok.keras", MLP)
    model = load_model(tmp_path / "ok.keras")
    with h5py.File(io.BytesIO(zipfile.ZipFile(tmp_path / "ok.keras").read(
            "model.weights.h5"))) as h:
        w0, b0, w1, b1 = (h[f"layers/{n}/vars/{j}"][()] for n in ("dense", "dense_1")
                          for j in ("0", "1"))
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_allclose(model(x), np.maximum(x @ w0 + b0, 0) @ w1 + b1, rtol=1e-5)


def canary_lambda_entry(canary):
    """A Keras Lambda layer whose marshalled bytecode would create `canary`."""
    def payload(x):
        open(canary, "w").close()
        return x
    code = base64.b64encode(marshal.dumps(payload.__code__)).decode("ascii")
    return {"module": "keras.layers", "class_name": "Lambda", "registered_name": None,
            "config": {"name": "lambda", "function": {
                "class_name": "__lambda__",
                "config": {"code": code, "defaults": None, "closure": None}}}}


@pytest.mark.parametrize("payload, offenders", [
    ({"module": "os", "class_name": "system", "config": {"command": "touch CANARY"}},
     ["'system' (module 'os')"]),
    (dense_entry("d", 2, {"module": "builtins", "class_name": "function",
                          "config": "exec", "registered_name": "function"}),
     ["function 'exec'"]),
    (dense_entry("d", 2, kernel_initializer={"module": "subprocess", "class_name": "Popen",
                                             "config": {"args": ["touch", "CANARY"]}}),
     ["'Popen' (module 'subprocess')"]),
    ({"module": "keras.layers", "class_name": "Dense", "registered_name": "os>system",
      "config": {"name": "d", "units": 2}}, ["'os>system'"]),
    # A nested load_model, as a function and as a "class" in Keras's own namespace.
    ({"module": "keras.saving", "class_name": "function", "config": "load_model",
      "registered_name": "function"}, ["function 'load_model'"]),
    ({"module": "keras.src.saving.saving_lib", "class_name": "load_model",
      "config": {"filepath": "other.keras", "safe_mode": False}}, ["'load_model'"]),
    (canary_lambda_entry("CANARY"), ["layer 'lambda': a Lambda layer holds Python bytecode"]),
], ids=["os_system-as-layer", "exec-as-activation", "subprocess_Popen-as-initializer",
        "os_system-as-registered_name", "load_model-as-function", "load_model-as-class",
        "lambda-bytecode"])
def test_keras_configs_that_would_run_code_are_refused(tmp_path, monkeypatch, payload,
                                                       offenders):
    monkeypatch.chdir(tmp_path)
    write_keras_file(tmp_path / "evil.keras", sequential_config(payload))
    before = files_under(tmp_path)
    with pytest.raises(ValueError, match="never imports, unpickles or runs code") as e:
        load_model(tmp_path / "evil.keras")
    for offender in offenders:
        assert offender in str(e.value)
    assert not (tmp_path / "CANARY").exists()
    assert files_under(tmp_path) == before


def test_every_offender_is_named_in_one_error(tmp_path):
    config = sequential_config(
        canary_lambda_entry(str(tmp_path / "CANARY")),
        {"module": "my_project.layers", "class_name": "Gate", "config": {"name": "gate"}},
        dense_entry("d", 2, "my_activation"),
        dense_entry("e", 2, synchronized=True),
        {"module": "keras.layers", "class_name": "TFSMLayer",
         "config": {"name": "tfsm", "filepath": "saved_model"}})
    write_keras_file(tmp_path / "many.keras", config)
    with pytest.raises(ValueError) as e:
        load_model(tmp_path / "many.keras")
    message = str(e.value)
    assert "a Lambda layer holds Python bytecode" in message
    assert ("'Gate' (module 'my_project.layers') is not a Keras built-in: if it is your class, "
            "pass custom_objects={'Gate': YourClass}") in message
    assert "register_serializable()" in message
    assert "option synchronized=True is not supported by loopax's Dense" in message
    assert "layer 'tfsm': 'TFSMLayer' (module 'keras.layers') is a Keras class loopax has no " \
           "counterpart for" in message
    assert not (tmp_path / "CANARY").exists()


def test_unknown_activation_name_is_an_error_not_a_lookup(tmp_path):
    write_keras_file(tmp_path / "act.keras", sequential_config(dense_entry("d", 4, "os.system"),
                                                              dense_entry("e", 2)))
    with pytest.raises(ValueError, match="Unknown activation 'os.system'"):
        load_model(tmp_path / "act.keras")


def test_zip_path_traversal_entry_is_refused_and_nothing_is_written(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    write_keras_file(target / "trav.keras", MLP, extra=[("../evil", b"x"),
                                                        ("assets/../../evil2", b"x")])
    before = files_under(tmp_path)
    with pytest.raises(ValueError, match=r"point outside it \['../evil', 'assets/../../evil2'\]"):
        load_model(target / "trav.keras")
    assert files_under(tmp_path) == before


def test_truncated_zip_and_truncated_hdf5_are_clear_errors(tmp_path):
    write_keras_file(tmp_path / "ok.keras", MLP)
    data = (tmp_path / "ok.keras").read_bytes()
    (tmp_path / "cut.keras").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"cut.keras is corrupt or truncated: BadZipFile"):
        load_model(tmp_path / "cut.keras")
    buffer = io.BytesIO()
    mlp_weights_h5(buffer)
    write_keras_file(tmp_path / "cut_h5.keras", MLP, weights=buffer.getvalue()[:700])
    with pytest.raises(ValueError, match="HDF5 weights cannot be read"):
        load_model(tmp_path / "cut_h5.keras")
    (tmp_path / "cut.weights.h5").write_bytes(buffer.getvalue()[:700])
    model = loopax.Sequential([loopax.Input((5,)), Dense(4), Dense(2)])
    with pytest.raises(ValueError, match="cut.weights.h5: the HDF5 weights cannot be read"):
        model.load_weights(tmp_path / "cut.weights.h5")


def mlp_model():
    return loopax.Sequential([loopax.Input((5,)), Dense(4), Dense(2)])


@pytest.mark.parametrize("link, message", [
    (lambda: h5py.ExternalLink("/etc/hostname", "/"), "ExternalLink to '/etc/hostname:/'"),
    (lambda: h5py.SoftLink("/layers/dense/vars/0"), "SoftLink to ':/layers/dense/vars/0'"),
], ids=["external-link", "soft-link"])
def test_hdf5_links_are_refused(tmp_path, link, message):
    def edit(h):
        del h["layers/dense_1/vars/0"]
        h["layers/dense_1/vars/0"] = link()
    mlp_weights_h5(tmp_path / "link.weights.h5", edit=edit)
    with pytest.raises(ValueError, match="'layers/dense_1/vars/0' is a " + message):
        mlp_model().load_weights(tmp_path / "link.weights.h5")


def test_absurd_dataset_shape_is_refused_before_reading(tmp_path):
    def edit(h):
        del h["layers/dense/vars/0"]
        # 10**12 float32 (4 TB) declared; no chunk written, so the file stays small.
        h.create_dataset("layers/dense/vars/0", shape=(10**6, 10**6), dtype="f4",
                         chunks=(1, 1))
    path = tmp_path / "huge.weights.h5"
    mlp_weights_h5(path, edit=edit)
    assert path.stat().st_size < 10**6
    model = mlp_model()
    with pytest.raises(ValueError, match=r"layers/dense/vars/0 for layers/dense \('dense(_\d+)?'\)"
                       r": file \(1000000, 1000000\), model \(5, 4\)"):
        model.load_weights(path)


def test_dataset_that_disagrees_with_the_layer_is_refused_in_a_keras_file(tmp_path):
    buffer = io.BytesIO()
    mlp_weights_h5(buffer, shapes=((5, 4), (4,), (3, 2), (2,)))
    write_keras_file(tmp_path / "shape.keras", MLP, weights=buffer.getvalue())
    with pytest.raises(ValueError, match=r"layers/dense_1/vars/0 for layers/dense_1 \('dense_1'\)"
                       r": file \(3, 2\), model \(4, 2\)"):
        load_model(tmp_path / "shape.keras")


def test_non_numeric_and_virtual_datasets_are_refused(tmp_path):
    def strings(h):
        del h["layers/dense/vars/1"]
        h["layers/dense/vars/1"] = np.array([b"x"] * 4, dtype=object).astype(
            h5py.string_dtype())
    mlp_weights_h5(tmp_path / "str.weights.h5", edit=strings)
    with pytest.raises(ValueError, match="'layers/dense/vars/1' has dtype object"):
        mlp_model().load_weights(tmp_path / "str.weights.h5")

    mlp_weights_h5(tmp_path / "source.h5")

    def virtual(h):
        del h["layers/dense/vars/1"]
        layout = h5py.VirtualLayout(shape=(4,), dtype="f4")
        layout[:] = h5py.VirtualSource(str(tmp_path / "source.h5"), "layers/dense/vars/1",
                                       shape=(4,))
        h.create_virtual_dataset("layers/dense/vars/1", layout)
    mlp_weights_h5(tmp_path / "virtual.weights.h5", edit=virtual)
    with pytest.raises(ValueError, match="'layers/dense/vars/1' stores its data in other files"):
        mlp_model().load_weights(tmp_path / "virtual.weights.h5")


def test_dataset_whose_stored_size_disagrees_with_its_shape_is_refused(tmp_path):
    # A kernel stored as (5, 2) whose header is edited to say (5, 4), the layer's
    # shape: HDF5 itself would read 40 bytes past its storage.
    path = tmp_path / "grown.weights.h5"
    mlp_weights_h5(path, shapes=((5, 2), (4,), (4, 2), (2,)))
    data = path.read_bytes()
    assert data.count(struct.pack("<QQ", 5, 2)) == 2   # dims and max dims
    path.write_bytes(data.replace(struct.pack("<QQ", 5, 2), struct.pack("<QQ", 5, 4)))
    with pytest.raises(ValueError, match=r"'layers/dense/vars/0' declares shape \(5, 4\) "
                       r"\(80 bytes\) but stores 40 bytes"):
        mlp_model().load_weights(path)

    def unwritten(h):   # declared, never written: HDF5 would read zeros
        del h["layers/dense/vars/1"]
        h.create_dataset("layers/dense/vars/1", shape=(4,), dtype="f4")
    mlp_weights_h5(tmp_path / "empty.weights.h5", edit=unwritten)
    with pytest.raises(ValueError, match=r"'layers/dense/vars/1' declares shape \(4,\) "
                       r"\(16 bytes\) but stores 0 bytes"):
        mlp_model().load_weights(tmp_path / "empty.weights.h5")
