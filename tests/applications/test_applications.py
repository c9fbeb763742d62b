"""loopax.applications against Keras's applications.

The weight mapping is checked as the issue asks: Keras builds the application
(weights=None), its weights are randomized and saved by Keras (Keras 3's
`.weights.h5`, and the legacy HDF5 layout of Keras's published ImageNet
files), loopax's application loads them, and both predict the same numbers
on the same images (rtol 1e-5 / atol 1e-5: float32, same XLA ops). The other
architectures are compared by their weights' names, shapes and order.

Initializers are replaced by zeros while building (the weights are loaded
afterwards anyway): sampling each weight shape compiles a random kernel,
which would dominate the test time.
"""

import contextlib
import os
import re
from unittest import mock

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

keras = pytest.importorskip("keras")
if keras.backend.backend() != "jax":
    pytest.skip("needs KERAS_BACKEND=jax", allow_module_level=True)
legacy_h5 = pytest.importorskip("keras.src.legacy.saving.legacy_h5_format")
h5py = pytest.importorskip("h5py")

import loopax  # noqa: E402
import loopax.src.random as loopax_random  # noqa: E402

keras_random = pytest.importorskip("keras.src.backend.jax.random")


def _zeros(shape, *args, **kwargs):
    return np.zeros(shape, "float32")


@contextlib.contextmanager
def zero_initializers(module):
    with mock.patch.object(module, "uniform", _zeros), \
            mock.patch.object(module, "normal", _zeros), \
            mock.patch.object(module, "truncated_normal", _zeros):
        yield


def keras_model(name, **kwargs):
    with zero_initializers(keras_random):
        model = getattr(keras.applications, name)(weights=None, **kwargs)
    rng = np.random.default_rng(0)
    for w in model.weights:
        value = rng.standard_normal(tuple(w.shape)).astype("float32") * 0.1
        if "variance" in w.path:
            value = np.abs(value) + 0.5
        w.assign(value)
    return model


def loopax_model(name, **kwargs):
    with zero_initializers(loopax_random):
        return getattr(loopax.applications, name)(**kwargs)


def test_mobilenet_v2_loads_keras_weight_files_and_predicts_as_keras(tmp_path):
    kwargs = {"input_shape": (32, 32, 3), "classes": 5, "alpha": 0.35}
    reference = keras_model("MobileNetV2", **kwargs)
    reference.save_weights(tmp_path / "m.weights.h5")
    with h5py.File(tmp_path / "m_legacy.h5", "w") as f:  # the published files' layout
        legacy_h5.save_weights_to_hdf5_group(f, reference)
    images = np.random.default_rng(1).random((2, 32, 32, 3)).astype("float32") * 255
    x = loopax.applications.mobilenet_v2.preprocess_input(images)
    np.testing.assert_allclose(x, keras.applications.mobilenet_v2.preprocess_input(images))
    expected = reference.predict(x, verbose=0)
    model = loopax_model("MobileNetV2", weights=str(tmp_path / "m.weights.h5"), **kwargs)
    assert [layer.name for layer in model.layers] == [layer.name for layer in reference.layers]
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-5)
    for w in model.weights:
        w.assign(np.zeros(w.shape, w.dtype))
    from loopax.src.applications.imagenet_utils import load_application_weights
    load_application_weights(model, tmp_path / "m_legacy.h5")
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-5)


def described(model):
    """(class, name) per layer, auto-generated names (input_layer_3) left out."""
    out = []
    for layer in model.layers:
        cls = type(layer).__name__
        auto = re.fullmatch(re.sub(r"(?<!^)(?=[A-Z])", "_", cls).lower() + r"(_\d+)?",
                            layer.name)
        out.append((cls, None if auto else layer.name))
    return out


@pytest.mark.parametrize("name, kwargs", [
    ("ResNet50", {"input_shape": (32, 32, 3), "include_top": False, "pooling": "avg"}),
    ("EfficientNetB0", {"input_shape": (32, 32, 3), "classes": 3}),
    ("VGG16", {"input_shape": (32, 32, 3), "include_top": False, "pooling": "max"}),
    ("MobileNetV2", {"input_shape": (64, 64, 3), "include_top": False, "alpha": 1.4}),
], ids=["ResNet50-no_top-avg_pool", "EfficientNetB0-3_classes", "VGG16-no_top-max_pool",
        "MobileNetV2-no_top-alpha_1.4"])
def test_architecture_matches_keras(name, kwargs):
    reference = keras_model(name, **kwargs)
    model = loopax_model(name, weights=None, **kwargs)
    assert model.name == reference.name
    assert described(model) == described(reference)
    assert [tuple(w.shape) for w in model.weights] == [tuple(w.shape) for w in reference.weights]
    assert tuple(model.outputs[0].shape) == tuple(reference.outputs[0].shape)


@pytest.mark.parametrize("module", ["resnet50", "vgg16", "mobilenet_v2", "efficientnet"])
def test_preprocess_input_matches_keras(module):
    images = np.random.default_rng(2).integers(0, 256, (2, 4, 5, 3)).astype("float32")
    for x in (images, images[0]):
        np.testing.assert_allclose(
            getattr(loopax.applications, module).preprocess_input(x.copy()),
            getattr(keras.applications, module).preprocess_input(x.copy()), rtol=1e-6)


def test_decode_predictions_reads_a_local_class_index(tmp_path):
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    path = tmp_path / "imagenet_class_index.json"
    path.write_text(__import__("json").dumps(index))
    preds = np.random.default_rng(3).random((2, 1000)).astype("float32")
    decoded = loopax.applications.resnet50.decode_predictions(preds, top=3,
                                                              class_index_path=str(path))
    for row, result in zip(preds, decoded):
        best = np.argsort(row)[::-1][:3]
        assert [r[1] for r in result] == [f"class_{i}" for i in best]
        np.testing.assert_allclose([r[2] for r in result], row[best])
    with pytest.raises(FileNotFoundError, match="downloads nothing"):
        loopax.applications.resnet50.decode_predictions(
            preds, class_index_path=str(tmp_path / "missing.json"))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="downloads nothing"):
        loopax.applications.ResNet50()  # weights="imagenet" by default, as Keras
    with pytest.raises(ValueError, match="pooling"):
        loopax.applications.VGG16(weights=None, include_top=False, pooling="mean")
    with pytest.raises(ValueError, match="at least 32"):
        loopax.applications.MobileNetV2(weights=None, input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="does not exist"):
        loopax.applications.EfficientNetB0(weights="/nonexistent/file.h5")
