"""`loopax.applications.<family>` and `loopax.preprocessing` modules, against
Keras's: every family module Keras has exists, with `preprocess_input` giving
Keras's numbers and `decode_predictions` reading a local class index (never
downloading); `preprocessing.sequence.pad_sequences` as Keras's."""

import json
import types

import numpy as np
import pytest
from keras_reference import keras

import loopax
from loopax.src.utils import file_utils

KERAS_MODULES = sorted(n for n, v in vars(keras.applications).items()
                       if isinstance(v, types.ModuleType) and not n.startswith("_"))
IMAGES = np.random.default_rng(2).integers(0, 256, (2, 4, 5, 3)).astype("float32")


def test_keras_has_the_family_modules_listed_here():
    assert {"resnet", "resnet_v2", "vgg19", "xception", "densenet", "convnext",
            "mobilenet_v3", "efficientnet_v2", "nasnet"} <= set(KERAS_MODULES)


@pytest.mark.parametrize("module", KERAS_MODULES)
def test_family_module_exists_and_preprocesses_as_keras(module):
    ours = getattr(loopax.applications, module)
    theirs = getattr(keras.applications, module)
    assert set(ours.__all__) <= {n for n in dir(theirs) if not n.startswith("_")}
    for data_format, images in [("channels_last", IMAGES),
                                ("channels_first", IMAGES.transpose(0, 3, 1, 2))]:
        for x in (images, images[0]):
            np.testing.assert_allclose(
                np.asarray(ours.preprocess_input(x.copy(), data_format=data_format)),
                np.asarray(theirs.preprocess_input(x.copy(), data_format=data_format)),
                rtol=1e-6, err_msg=f"{module} {data_format} shape {x.shape}")


@pytest.fixture
def no_download(monkeypatch, tmp_path):
    """A home without Keras's cache, `$LOOPAX_HOME` in tmp_path, and no network."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LOOPAX_HOME", str(tmp_path / "loopax_home"))

    def refuse(url, destination):
        raise AssertionError(f"decode_predictions tried to download {url}")
    monkeypatch.setattr(file_utils, "_urlretrieve", refuse)
    return tmp_path / "loopax_home"


@pytest.mark.parametrize("module", ["resnet_v2", "xception", "densenet", "resnet50"])
def test_decode_predictions_reads_a_local_index_and_never_downloads(module, no_download):
    preds = np.random.default_rng(3).random((2, 1000)).astype("float32")
    decode = getattr(loopax.applications, module).decode_predictions
    with pytest.raises(FileNotFoundError, match="class_index_path=.*imagenet_class_index"):
        decode(preds)
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    (no_download / "models").mkdir(parents=True)
    (no_download / "models" / "imagenet_class_index.json").write_text(json.dumps(index))
    for row, result in zip(preds, decode(preds, top=3)):
        best = np.argsort(row)[::-1][:3]
        assert [r[1] for r in result] == [f"class_{i}" for i in best]
        np.testing.assert_allclose([r[2] for r in result], row[best])


def test_preprocessing_module_paths_map_to_loopax():
    """`keras.preprocessing.sequence.pad_sequences` code runs with loopax's paths."""
    from loopax.preprocessing.sequence import pad_sequences
    sequences = [[1, 2, 3], [4], [5, 6]]
    for kwargs in [{}, {"maxlen": 2, "padding": "post", "truncating": "post"},
                   {"maxlen": 4, "value": -1}]:
        np.testing.assert_array_equal(
            pad_sequences(sequences, **kwargs),
            keras.preprocessing.sequence.pad_sequences(sequences, **kwargs))
    assert loopax.preprocessing.sequence.pad_sequences is loopax.utils.pad_sequences
