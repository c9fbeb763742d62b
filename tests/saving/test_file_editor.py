"""`loopax.saving.KerasFileEditor` against Keras 3.15.1's `keras.saving.KerasFileEditor`.

Files are written by Keras itself and by loopax. The editor reads the weights
Keras's editor reads; the same edits through both editors write the same HDF5
datasets; an edited file loads into Keras and loopax models of the edited
architecture with the values expected; nothing in a file is run or followed.
"""

import json
import warnings

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

import loopax  # noqa: E402
from loopax.saving import KerasFileEditor  # noqa: E402

RNG = np.random.default_rng(22)


def keras_or_skip():
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "jax":
        pytest.skip("the Keras reference runs on its JAX backend")
    return keras


def model(lib, norm="BatchNormalization", head=3):
    """Dense(8) -> a normalization -> Dense(head), a functional model."""
    inputs = lib.Input((4,))
    h = lib.layers.Dense(8)(inputs)
    h = getattr(lib.layers, norm)()(h)
    return lib.Model(inputs, lib.layers.Dense(head)(h))


def randomized(keras_model):
    keras_model.set_weights([RNG.normal(size=w.shape).astype(w.dtype) + (1.5 if w.ndim == 1
                                                                         else 0.0)
                             for w in keras_model.get_weights()])
    return keras_model


def datasets(path):
    """`{h5 path: array}` of every dataset in an HDF5 file."""
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()])
                     if isinstance(obj, h5py.Dataset) else None)
    return out


def assert_trees_equal(ours, theirs):
    assert list(ours) == list(theirs)
    for key in ours:
        if isinstance(theirs[key], dict):
            assert_trees_equal(ours[key], theirs[key])
        else:
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)


@pytest.fixture
def keras_files(tmp_path):
    keras = keras_or_skip()
    original = randomized(model(keras))
    original.save(tmp_path / "keras.keras")
    original.save_weights(tmp_path / "keras.weights.h5")
    return keras, original, tmp_path


@pytest.mark.parametrize("name", ["keras.keras", "keras.weights.h5"])
def test_reads_the_weights_keras_s_editor_reads(keras_files, name, capsys):
    keras, _, folder = keras_files
    theirs = keras.saving.KerasFileEditor(str(folder / name))
    ours = KerasFileEditor(folder / name)
    assert_trees_equal(ours.weights_dict, theirs.weights_dict)
    if name.endswith(".keras"):
        assert ours.config == theirs.config and ours.metadata == theirs.metadata
    capsys.readouterr()
    ours.summary()
    printed = capsys.readouterr().out
    assert "batch_normalization" in printed and "shape=(4, 8), dtype=float32" in printed


def test_a_loopax_archive_is_shown_in_keras_s_layout(keras_files):
    """A loopax `.keras` file of the same model holds the weights where Keras's does."""
    keras, original, folder = keras_files
    loopax_model = model(loopax)
    loopax_model.set_weights(original.get_weights())
    loopax_model.save(folder / "loopax.keras")
    edited = KerasFileEditor(folder / "loopax.keras")
    assert_trees_equal(edited.weights_dict,
                       keras.saving.KerasFileEditor(str(folder / "keras.keras")).weights_dict)


def edit_bn_to_layer_norm_and_widen_the_head(editor, head):
    """BatchNormalization -> LayerNormalization (keeping gamma and beta), the
    3-unit head replaced by a 5-unit one: each editing method once."""
    editor.rename_object("layers/batch_normalization", "layer_normalization")
    editor.delete_weight("layer_normalization", "3")
    editor.delete_weight("layers/layer_normalization", "2")
    editor.delete_object("layers/dense_1")
    editor.add_object("layers/dense_1", {"0": head[0]})
    editor.add_weights("dense_1", {"1": head[1]})


def test_edits_write_what_keras_s_editor_writes_and_load_in_both(keras_files):
    keras, original, folder = keras_files
    head = [RNG.normal(size=(8, 5)).astype("float32"), RNG.normal(size=5).astype("float32")]
    for name in ("keras.keras", "keras.weights.h5"):
        theirs = keras.saving.KerasFileEditor(str(folder / name))
        edit_bn_to_layer_norm_and_widen_the_head(theirs, head)
        theirs.save(str(folder / "theirs.weights.h5"))
        ours = KerasFileEditor(folder / name)
        edit_bn_to_layer_norm_and_widen_the_head(ours, head)
        ours.save(folder / "ours.weights.h5")
        written, expected = datasets(folder / "ours.weights.h5"), datasets(
            folder / "theirs.weights.h5")
        assert sorted(written) == sorted(expected)
        for key in expected:
            np.testing.assert_array_equal(written[key], expected[key], err_msg=key)

    kernel, bias, gamma, beta, _, _, _, _ = original.get_weights()
    want = [kernel, bias, gamma, beta, *head]
    for lib in (keras, loopax):
        edited = model(lib, norm="LayerNormalization", head=5)
        edited.load_weights(folder / "ours.weights.h5")
        for got, expected in zip(edited.get_weights(), want):
            np.testing.assert_array_equal(np.asarray(got), expected)


def test_edits_of_a_loopax_archive_load_into_keras(keras_files):
    keras, original, folder = keras_files
    loopax_model = model(loopax)
    loopax_model.set_weights(original.get_weights())
    loopax_model.save(folder / "loopax.keras")
    head = [np.ones((8, 5), "float32"), np.arange(5, dtype="float32")]
    editor = KerasFileEditor(folder / "loopax.keras")
    edit_bn_to_layer_norm_and_widen_the_head(editor, head)
    editor.save(folder / "edited.weights.h5")
    edited = model(keras, norm="LayerNormalization", head=5)
    edited.load_weights(folder / "edited.weights.h5")
    want = original.get_weights()[:4] + head
    for got, expected in zip(edited.get_weights(), want):
        np.testing.assert_array_equal(np.asarray(got), expected)


def test_a_loopax_weights_file_is_edited_in_its_own_keys(tmp_path):
    source = model(loopax)
    source.save_weights(tmp_path / "m.weights.h5")      # safetensors, as loopax writes
    editor = KerasFileEditor(tmp_path / "m.weights.h5")
    assert sorted(editor.weights_dict) == ["batch_normalization", "dense", "dense_1"]
    assert set(editor.weights_dict["dense"]) == {"kernel", "bias"}
    new_bias = np.full(3, 7.0, "float32")
    editor.delete_weight("dense_1", "bias")
    editor.add_weights("dense_1", {"bias": new_bias})
    editor.save(tmp_path / "edited.weights.safetensors")
    target = model(loopax)
    target.load_weights(tmp_path / "edited.weights.safetensors")
    np.testing.assert_array_equal(np.asarray(target.layers[-1].bias.value), new_bias)
    np.testing.assert_array_equal(np.asarray(target.layers[1].kernel.value),
                                  np.asarray(source.layers[1].kernel.value))
    assert editor.compare(target)["status"] == "success"


def test_compare_counts_each_weight_once(keras_files):
    """Statuses as Keras's; counts are the true ones (Keras 3.15.1's own
    `compare` adds a nested object's running count twice: 8 weights here,
    it reports more)."""
    keras, _, folder = keras_files
    ours = KerasFileEditor(folder / "keras.weights.h5")
    theirs = keras.saving.KerasFileEditor(str(folder / "keras.weights.h5"))
    result = ours.compare(model(loopax))
    assert result == {"status": "success", "error_count": 0, "match_count": 8}
    assert theirs.compare(model(keras))["status"] == "success"
    wider = ours.compare(model(loopax, head=5))
    assert wider == {"status": "error", "error_count": 2, "match_count": 6}
    assert theirs.compare(model(keras, head=5))["status"] == "error"
    other = ours.compare(model(loopax, norm="LayerNormalization"))
    # layer_normalization missing from the file, batch_normalization from the model
    assert other == {"status": "error", "error_count": 2, "match_count": 4}


def test_a_name_found_once_is_found_beside_an_optimizer_group(tmp_path):
    """A compiled model's file has an `optimizer` group after `layers`; the name
    `dense` occurs once (as h5py lists it), so it is found. (Keras 3.15.1's
    editor counts it twice there and refuses.)"""
    keras = keras_or_skip()
    trained = model(keras)
    trained.compile(optimizer="adam", loss="mse")
    trained.fit(np.ones((4, 4)), np.ones((4, 3)), verbose=0)
    trained.save(tmp_path / "compiled.keras")
    editor = KerasFileEditor(tmp_path / "compiled.keras")
    names = []
    with h5py.File(editor_weights(tmp_path / "compiled.keras", tmp_path), "r") as f:
        f.visit(lambda name: names.append(name.rsplit("/", 1)[-1]))
    assert names.count("dense") == 1
    editor.rename_object("dense", "dense_9")
    assert list(editor.weights_dict["layers"]) == ["batch_normalization", "dense_1", "dense_9"]
    np.testing.assert_array_equal(editor.weights_dict["layers"]["dense_9"]["0"],
                                  np.asarray(trained.layers[1].kernel))


def editor_weights(keras_path, folder):
    """The HDF5 weights entry of a `.keras` archive, extracted to `folder`."""
    import zipfile
    with zipfile.ZipFile(keras_path) as zf:
        return zf.extract("model.weights.h5", folder)


BAD_EDITS = {
    "missing_path": (lambda e: e.delete_object("layers/dense_9"),
                     r"'layers/dense_9' not found: no object 'dense_9' under 'layers' "
                     r"\(it has: \['batch_normalization', 'dense', 'dense_1'\]\)"),
    "missing_parent": (lambda e: e.add_object("blocks/dense_9", {"0": np.ones(2)}),
                       r"'blocks/dense_9' not found: no object 'blocks' at the top"),
    "unknown_name": (lambda e: e.rename_object("dense_9", "x"),
                     r"'dense_9' does not appear in the file; editor.summary\(\)"),
    "ambiguous_name": (lambda e: e.delete_object("0"),
                       r"'0' occurs 3 times in the file \(\['layers/batch_normalization/0'"),
    "missing_weight": (lambda e: e.delete_weight("dense", "7"),
                       r"no weight '7' in object 'dense'. Weights found: \['0', '1'\]"),
    "path_as_new_name": (lambda e: e.rename_object("dense", "layers/dense_2"),
                         r"new name must be a name, not a path"),
    "weights_not_a_dict": (lambda e: e.add_weights("dense", [np.ones(2)]),
                           r"add_weights: `weights` must be a dict.*type\(weights\)=list"),
    "save_suffix": (lambda e: e.save("out.h5"), r"ending in \.weights\.h5"),
}


@pytest.mark.parametrize("edit, message", BAD_EDITS.values(), ids=BAD_EDITS.keys())
def test_bad_names_are_refused_naming_the_path(keras_files, edit, message):
    _, _, folder = keras_files
    with pytest.raises(ValueError, match=message):
        edit(KerasFileEditor(folder / "keras.weights.h5"))


def test_replacing_an_existing_object_warns_and_replaces_as_keras(keras_files):
    keras, _, folder = keras_files
    results = []
    for editor in (keras.saving.KerasFileEditor(str(folder / "keras.weights.h5")),
                   KerasFileEditor(folder / "keras.weights.h5")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            editor.rename_object("layers/dense", "dense_1")
        results.append((editor.weights_dict["layers"]["dense_1"]["0"].shape, len(caught)))
    assert results[0][0] == results[1][0] == (4, 8)
    assert results[1][1] == 1


def test_an_unknown_suffix_is_refused(tmp_path):
    (tmp_path / "m.h5").write_bytes(b"\x89HDF\r\n\x1a\n")
    with pytest.raises(ValueError, match=r"`.keras`, `.weights.h5` or.*filepath=.*m\.h5"):
        KerasFileEditor(tmp_path / "m.h5")


def write_h5(path, build):
    with h5py.File(path, "w") as f:
        build(f)


THREATS = {
    "soft_link": (lambda f: (f.create_dataset("layers/dense/vars/0", data=np.ones(2)),
                             f.__setitem__("layers/dense/vars/1",
                                           h5py.SoftLink("/layers/dense/vars/0"))),
                  r"SoftLink"),
    "external_link": (lambda f: f.__setitem__("layers/dense/vars/0",
                                              h5py.ExternalLink("/etc/passwd", "/x")),
                      r"ExternalLink"),
    "object_dtype": (lambda f: f.create_dataset(
        "layers/dense/vars/0", data=np.array([b"cos\nsystem\n"], dtype=object),
        dtype=h5py.string_dtype()), r"not a numeric weight"),
    "external_storage": (lambda f: f.create_dataset(
        "layers/dense/vars/0", shape=(4,), dtype="f4", external=[("/etc/hostname", 0, 16)]),
        r"stores its data in other files"),
}


@pytest.mark.parametrize("build, message", THREATS.values(), ids=THREATS.keys())
def test_nothing_in_a_file_is_followed_or_run(tmp_path, build, message):
    path = tmp_path / "evil.weights.h5"
    write_h5(path, build)
    with pytest.raises(ValueError, match=message):
        KerasFileEditor(path)


def test_a_loopax_archive_naming_an_unknown_class_is_refused_without_importing(tmp_path):
    source = model(loopax)
    source.save(tmp_path / "m.keras")
    import zipfile
    with zipfile.ZipFile(tmp_path / "m.keras") as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    config = json.loads(entries["config.json"])
    config["config"]["layers"][1]["class_name"] = "Popen"
    config["config"]["layers"][1]["module"] = "subprocess"
    entries["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(tmp_path / "evil.keras", "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    with pytest.raises((ValueError, TypeError), match="Popen"):
        KerasFileEditor(tmp_path / "evil.keras")


def test_a_safetensors_header_declaring_more_than_the_file_holds_is_refused(tmp_path):
    """A header may not make the reader allocate what the file does not hold."""
    header = json.dumps({"dense/kernel": {"dtype": "F32", "shape": [2**20, 2**15],
                                          "data_offsets": [0, 2**37]}}).encode()
    path = tmp_path / "lying.weights.h5"
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 16)
    with pytest.raises(ValueError, match=r"lying.weights.h5: the safetensors header declares "
                                         r"137438953472 bytes of weights but the file holds 16"):
        KerasFileEditor(path)


def test_a_compressed_dataset_may_not_inflate_past_a_bound(tmp_path):
    """64 MiB of zeros compress to a few hundred KiB: more than 64 times the file
    (plus 16 MiB) is refused before the dataset is read."""
    path = tmp_path / "bomb.weights.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("layers/dense/vars/0", data=np.zeros((4096, 4096), "f4"),
                         compression="gzip", compression_opts=9, chunks=(1024, 1024))
    assert path.stat().st_size * 64 + 16 * 2**20 < 64 * 2**20
    with pytest.raises(ValueError, match=r"bomb.weights.h5: dataset 'layers/dense/vars/0' takes "
                                         r"the arrays past 64 times the file's size"):
        KerasFileEditor(path)
