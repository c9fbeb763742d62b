"""loopax.applications against Keras's applications.

The weight mapping is checked as the issue asks: Keras builds the application
(weights=None), its weights are randomized and saved by Keras (Keras 3's
`.weights.h5`, and the legacy HDF5 layout of Keras's published ImageNet
files), loopax's application loads them, and both predict the same numbers
on the same images. One model per family is compared this way, reduced to few
blocks through Keras's generic family builder where it has one (DenseNet(blocks),
EfficientNet(width, depth), ConvNeXt(depths, dims), ...) so that compiling stays
cheap; every named variant (ResNet152, EfficientNetB7, ...) is compared by its
layers' classes and names, weight shapes, parameter count and output shape.

Variables start as NumPy zeros while building (the weights are assigned or
loaded afterwards anyway): sampling each weight shape compiles a random kernel,
which would dominate the test time.
"""

import contextlib
import inspect
import re
from unittest import mock

import jax
import numpy as np
import pytest

keras = pytest.importorskip("keras")
if keras.backend.backend() != "jax":
    pytest.skip("needs KERAS_BACKEND=jax", allow_module_level=True)
legacy_h5 = pytest.importorskip("keras.src.legacy.saving.legacy_h5_format")
h5py = pytest.importorskip("h5py")

import loopax  # noqa: E402


def _zeros(shape, dtype=None, *args, **kwargs):
    return np.zeros(shape, dtype or "float32")


def _keras_zero_variable(variable, initializer):
    variable._initialize(np.zeros(variable._shape, variable._dtype))


@contextlib.contextmanager
def zero_initializers():
    """Every new Keras and loopax variable starts as NumPy zeros: evaluating each
    initializer compiles one XLA program per weight shape, which would dominate the
    test time (the weights are assigned or loaded afterwards anyway)."""
    from keras.src.backend.jax.core import JaxVariable

    from loopax.src import state

    with mock.patch.object(JaxVariable, "_initialize_with_initializer",
                           _keras_zero_variable), \
            mock.patch.object(state, "_initializer_lookup", lambda initializer: _zeros):
        yield


def keras_model(name, randomize=True, **kwargs):
    with zero_initializers():
        model = getattr(keras.applications, name)(weights=None, **kwargs)
    return randomized(model) if randomize else model


def loopax_model(name, **kwargs):
    with zero_initializers():
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


def test_published_layout_with_other_auto_names_loads_by_order(tmp_path):
    """Keras's published files for InceptionV3, Xception, NASNet, ... name many layers
    by Keras 2's counters (`conv2d_1`, ...): Keras loads them by order of the layers
    with weights, and so does loopax when the names differ."""
    reference, build, _ = inception_resnet_blocks_pair()
    with h5py.File(tmp_path / "legacy.h5", "w") as f:
        legacy_h5.save_weights_to_hdf5_group(f, reference)
    path = tmp_path / "unused.weights.h5"
    reference.save_weights(path)
    with zero_initializers():
        build(str(path))   # a first model takes the auto names the file has
        model = build(str(path))
    assert {layer.name for layer in model.layers if layer.weights} != \
        {layer.name for layer in reference.layers if layer.weights}
    for w in model.weights:
        w.assign(np.zeros(w.shape, w.dtype))
    from loopax.src.applications.imagenet_utils import load_application_weights
    load_application_weights(model, tmp_path / "legacy.h5")
    x = np.random.default_rng(4).random((2, 9, 9, 3)).astype("float32")
    np.testing.assert_allclose(np.asarray(inference(model)(x)),
                               np.asarray(inference(reference)(x)), rtol=1e-4, atol=1e-4)


def described(model):
    """(class, name) per layer, auto-generated names (input_layer_3) left out."""
    out = []
    for layer in model.layers:
        cls = type(layer).__name__
        if cls == "OpLayer":   # loopax lists `a + b` between symbolic tensors; Keras not
            continue
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
    reference = keras_model(name, randomize=False, **kwargs)
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
    with pytest.raises(FileNotFoundError, match="does not exist"):
        loopax.applications.resnet50.decode_predictions(
            preds, class_index_path=str(tmp_path / "missing.json"))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="pooling"):
        loopax.applications.VGG16(weights=None, include_top=False, pooling="mean")
    with pytest.raises(ValueError, match="at least 32"):
        loopax.applications.MobileNetV2(weights=None, input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="does not exist"):
        loopax.applications.EfficientNetB0(weights="/nonexistent/file.h5")


# ---- weights="imagenet": Keras's published files, downloaded once --------------

@pytest.fixture
def downloads(monkeypatch, tmp_path):
    """Records download requests and serves `served[url]` bytes (none: offline)."""
    from loopax.src.utils import file_utils

    monkeypatch.setenv("LOOPAX_HOME", str(tmp_path / "home"))
    asked, served = [], {}

    def fake_urlretrieve(url, destination):
        asked.append(url)
        if url not in served:
            raise OSError("network unreachable")
        with open(destination, "wb") as f:
            f.write(served[url])

    monkeypatch.setattr(file_utils, "_urlretrieve", fake_urlretrieve)
    return asked, served


@pytest.mark.parametrize("owner, module, include_top, fields", [
    ("ResNet50", "resnet", True, {}), ("ResNet50", "resnet", False, {}),
    ("VGG16", "vgg16", True, {}), ("VGG16", "vgg16", False, {}),
    ("EfficientNetB0", "efficientnet", False, {}),
    ("MobileNetV2", "mobilenet_v2", True, {"alpha": 0.35, "rows": 96}),
    ("ResNet152V2", "resnet", False, {}), ("VGG19", "vgg19", True, {}),
    ("DenseNet169", "densenet", False, {}), ("Xception", "xception", True, {}),
    ("InceptionV3", "inception_v3", False, {}),
    ("InceptionResNetV2", "inception_resnet_v2", True, {}),
    ("MobileNet", "mobilenet", False, {"alpha": "2_5", "rows": 128}),
    ("EfficientNetB5", "efficientnet", True, {}),
    ("EfficientNetV2S", "efficientnet_v2", False, {}),
    ("ConvNeXtBase", "convnext", True, {}),
    ("NASNetLarge", "nasnet", False, {}),
    ("MobileNetV3/large_224_1.0_float", "mobilenet_v3", False, {}),
], ids=["resnet50-top", "resnet50-notop", "vgg16-top", "vgg16-notop", "efficientnetb0-notop",
        "mobilenetv2-0.35-96", "resnet152v2-notop", "vgg19-top", "densenet169-notop",
        "xception-top", "inception_v3-notop", "inception_resnet_v2-top",
        "mobilenet-0.25-128-notop", "efficientnetb5-top", "efficientnetv2s-notop",
        "convnext_base-top", "nasnet_large-notop", "mobilenet_v3_large-notop"])
def test_imagenet_weights_come_from_keras_published_urls(downloads, owner, module,
                                                         include_top, fields):
    from loopax.src.applications.imagenet_utils import PUBLISHED_WEIGHTS, resolve_weights

    keras_module = __import__(f"keras.src.applications.{module}", fromlist=["_"])
    asked, _ = downloads
    with pytest.raises(OSError, match="pass its local path"):
        resolve_weights("imagenet", owner, include_top, **fields)
    url = asked[-1]
    keras_urls = [getattr(keras_module, name) for name in dir(keras_module)
                  if ("PATH" in name or "URL" in name)
                  and isinstance(getattr(keras_module, name), str)]
    assert any(url.startswith(base) or url == base for base in keras_urls), (url, keras_urls)
    file_name = url.rsplit("/", 1)[1]
    assert (file_name in PUBLISHED_WEIGHTS[owner]) or owner in ("MobileNetV2", "MobileNet")
    if owner == "MobileNetV2":   # Keras's naming: _{float(alpha)}_{rows}
        assert file_name == "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96.h5"
    if owner == "MobileNet":
        assert file_name == "mobilenet_2_5_128_tf_no_top.h5"
    ours = PUBLISHED_WEIGHTS[owner][2 if include_top else 4]
    hashes = getattr(keras_module, "WEIGHTS_HASHES", None)
    if hashes is not None:   # our hashes are Keras's
        assert ours in {h for pair in hashes.values() for h in pair}
    elif ours is not None:   # Keras passes them inline to get_file
        assert f'file_hash="{ours}"' in inspect.getsource(keras_module)


def test_a_download_with_the_wrong_hash_is_refused_and_deleted(downloads, tmp_path):
    from loopax.src.applications.imagenet_utils import PUBLISHED_WEIGHTS, resolve_weights

    _, served = downloads
    folder, name = PUBLISHED_WEIGHTS["VGG16"][0], PUBLISHED_WEIGHTS["VGG16"][3]
    served[folder + name] = b"not the published weights"
    with pytest.raises(ValueError, match="md5"):
        resolve_weights("imagenet", "VGG16", include_top=False)
    assert not list((tmp_path / "home" / "models").iterdir())


def test_a_cached_download_is_not_fetched_again(downloads, tmp_path):
    from loopax.src.applications.imagenet_utils import resolve_weights

    asked, served = downloads
    url = ("https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/"
           "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224_no_top.h5")
    served[url] = b"weights"   # Keras publishes no hash for MobileNetV2's files
    first = resolve_weights("imagenet", "MobileNetV2", False, alpha=1.0, rows=224)
    second = resolve_weights("imagenet", "MobileNetV2", False, alpha=1.0, rows=224)
    assert first == second and asked == [url]
    assert open(first, "rb").read() == b"weights"


def test_resnet50_by_default_downloads_before_building(downloads):
    asked, _ = downloads
    with pytest.raises(OSError, match="resnet50_weights_tf_dim_ordering_tf_kernels.h5"):
        loopax.applications.ResNet50()   # weights="imagenet", as in Keras
    assert len(asked) == 1


# ---- every family Keras ships ----------------------------------------------------
# One representative per family predicts as Keras on Keras's saved weights; every
# other variant is compared by architecture (cheap: nothing is compiled).

def count_params(model):
    return sum(int(np.prod(w.shape)) for w in model.weights)


def assert_same_architecture(model, reference):
    assert model.name == reference.name
    assert described(model) == described(reference)
    assert [tuple(w.shape) for w in model.weights] == [tuple(w.shape) for w in reference.weights]
    assert count_params(model) == count_params(reference)
    assert tuple(model.outputs[0].shape) == tuple(reference.outputs[0].shape)


def inference(model):
    """`model(x, training=False)` on the model's current weights, compiled as one
    program: op-by-op dispatch would compile each layer's ops on its own, several times
    slower for these models. The weights go in as arguments (`stateless_call`), not as
    constants baked into the program, which XLA compiles about 3x faster at -O0."""
    step = jax.jit(lambda trainable, non_trainable, x: model.stateless_call(
        trainable, non_trainable, x, training=False)[0])
    return lambda x: step([v.value for v in model.trainable_variables],
                          [v.value for v in model.non_trainable_variables], x)


def assert_predicts_as_keras(reference, build, module, tmp_path):
    """`reference` (a Keras model, random weights) saved by Keras, loaded through
    loopax's `weights=path` by `build(weights=path)`; both predict the same numbers on
    the same images preprocessed by `module`'s `preprocess_input` (Keras's and
    loopax's equal)."""
    path = tmp_path / "reference.weights.h5"
    reference.save_weights(path)
    shape = (2, *reference.inputs[0].shape[1:])
    images = np.random.default_rng(1).random(shape).astype("float32") * 255
    x = getattr(keras.applications, module).preprocess_input(images.copy())
    np.testing.assert_allclose(
        np.asarray(getattr(loopax.applications, module).preprocess_input(images.copy())),
        np.asarray(x), rtol=1e-6)
    expected = np.asarray(inference(reference)(x))
    with zero_initializers():
        model = build(weights=str(path))
    assert_same_architecture(model, reference)
    got = np.asarray(inference(model)(x))
    scale = max(np.abs(expected).max(), 1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * scale)


def randomized(model):
    rng = np.random.default_rng(0)
    for w in model.weights:
        value = rng.standard_normal(tuple(w.shape)).astype("float32") * 0.1
        if "variance" in w.path:
            value = np.abs(value) + 0.5
        w.assign(value)
    return model


def keras_reduced(builder, **kwargs):
    """Keras's generic family builder (e.g. `densenet.DenseNet(blocks)`), few blocks."""
    with zero_initializers():
        return randomized(builder(weights=None, **kwargs))


def loopax_reduced(builder, owner, **kwargs):
    defaults = {"include_top": True, "input_tensor": None, "pooling": None,
                "classifier_activation": "softmax"}
    return lambda weights: builder(weights=weights, owner=owner, **{**defaults, **kwargs})


def resnet_pair(preact):
    from keras.src.applications import resnet as keras_resnet

    from loopax.src.applications import resnet

    stack = keras_resnet.stack_residual_blocks_v2 if preact else \
        keras_resnet.stack_residual_blocks_v1

    def stack_fn(x):   # two blocks per stage, strides as in ResNet50(V2)
        for index, filters in enumerate((64, 128, 256, 512)):
            first = index == (3 if preact else 0)
            x = stack(x, filters, 2, stride1=1 if first else 2, name=f"conv{index + 2}")
        return x

    kwargs = {"input_shape": (32, 32, 3), "classes": 4, "name": "resnet"}
    reference = keras_reduced(keras_resnet.ResNet, stack_fn=stack_fn, preact=preact,
                              use_bias=True, **kwargs)
    build = loopax_reduced(resnet.build_resnet, "ResNet50", blocks=(2, 2, 2, 2),
                           preact=preact, **kwargs)
    return reference, build, "resnet_v2" if preact else "resnet"


def densenet_pair():
    from keras.src.applications import densenet as keras_densenet

    from loopax.src.applications import densenet

    kwargs = {"blocks": (1, 2, 1, 1), "input_shape": (32, 32, 3), "classes": 4,
              "name": "densenet", "include_top": False, "pooling": "max"}
    reference = keras_reduced(keras_densenet.DenseNet, **kwargs)
    return reference, loopax_reduced(densenet.build_densenet, "DenseNet121", **kwargs), \
        "densenet"


def efficientnet_pair():
    from keras.src.applications import efficientnet as keras_efficientnet

    from loopax.src.applications import efficientnet

    kwargs = {"width_coefficient": 0.5, "depth_coefficient": 0.1, "default_size": 224,
              "dropout_rate": 0.2, "input_shape": (32, 32, 3), "classes": 3,
              "name": "efficientnet"}
    reference = keras_reduced(keras_efficientnet.EfficientNet, **kwargs)
    return reference, loopax_reduced(efficientnet.build_efficientnet, "EfficientNetB0",
                                     **kwargs), "efficientnet"


def mobilenet_pair():
    kwargs = {"input_shape": (32, 32, 3), "alpha": 0.25, "classes": 6}
    return keras_reduced(keras.applications.MobileNet, **kwargs), \
        lambda weights: loopax.applications.MobileNet(weights=weights, **kwargs), "mobilenet"


def named_pair(name, module, **kwargs):
    """Keras's and loopax's `name` application, built with the same arguments."""
    def make_pair():
        reference = keras_reduced(getattr(keras.applications, name), **kwargs)
        return reference, lambda weights: getattr(loopax.applications, name)(
            weights=weights, **kwargs), module
    return make_pair


def inception_resnet_blocks_pair():
    """Keras has no smaller InceptionResNetV2: its three residual block types in a
    row (the whole model's architecture is compared in `VARIANTS`)."""
    from keras.src.applications import inception_resnet_v2 as keras_irv2

    from loopax.src.applications import inception_resnet_v2

    def blocks(framework, module):
        inputs = framework.Input((9, 9, 3))
        x = module.inception_resnet_block(inputs, 0.17, "block35", 1)
        x = module.inception_resnet_block(x, 0.1, "block17", 1)
        x = module.inception_resnet_block(x, 1.0, "block8", 10, activation=None)
        return framework.Model(inputs, x, name="blocks")

    with zero_initializers():
        reference = randomized(blocks(keras, keras_irv2))

    def build(weights):
        model = blocks(loopax, inception_resnet_v2)
        model.load_weights(weights)
        return model
    return reference, build, "inception_resnet_v2"


def convnext_pair():
    from keras.src.applications import convnext as keras_convnext

    from loopax.src.applications import convnext

    kwargs = {"depths": [1, 2, 1, 1], "projection_dims": [8, 16, 24, 32],
              "input_shape": (32, 32, 3), "classes": 3, "name": "convnext_tiny"}
    reference = keras_reduced(keras_convnext.ConvNeXt, **kwargs)
    return reference, loopax_reduced(convnext.build_convnext, "ConvNeXtTiny", **kwargs), \
        "convnext"


def efficientnet_v2_pair(name, stages):
    """Keras's `EfficientNetV2` on a few blocks of each kind (fused without and with
    expansion, MBConv with squeeze-excite, residuals): `stages` in loopax's table
    form, the same blocks in Keras's dicts."""
    keys = ("kernel_size", "num_repeat", "input_filters", "output_filters", "expand_ratio",
            "se_ratio", "strides", "conv_type")

    def make_pair():
        from keras.src.applications import efficientnet_v2 as keras_v2

        from loopax.src.applications import efficientnet_v2

        blocks_args = [dict(zip(keys, (*stage[:7], int(stage[7])))) for stage in stages]
        common = {"width_coefficient": 1.0, "depth_coefficient": 1.0, "default_size": 224,
                  "input_shape": (32, 32, 3), "classes": 3, "name": name}
        reference = keras_reduced(keras_v2.EfficientNetV2, blocks_args=blocks_args, **common)
        build = loopax_reduced(efficientnet_v2.build_efficientnet_v2, "EfficientNetV2B0",
                               stages=stages, normalize_imagenet=name.endswith("b0"),
                               **common)
        return reference, build, "efficientnet_v2"
    return make_pair


_V2_STAGES = ((3, 1, 8, 8, 1, 0, 1, True), (3, 2, 8, 16, 4, 0, 2, True),
              (3, 2, 16, 16, 4, 0.25, 1, False))

def nasnet_pair():
    from keras.src.applications import nasnet as keras_nasnet

    from loopax.src.applications import nasnet

    common = {"penultimate_filters": 96, "num_blocks": 1, "stem_block_filters": 8,
              "default_size": 224, "input_shape": (32, 32, 3), "classes": 3,
              "name": "nasnet"}
    reference = keras_reduced(keras_nasnet.NASNet, skip_reduction=False, **common)
    build = loopax_reduced(nasnet.build_nasnet, "NASNetMobile", skip_reduction=False,
                           **common)
    return reference, build, "nasnet"


FAMILY_REPRESENTATIVES = [
    pytest.param(lambda: resnet_pair(preact=False), id="ResNet-v1-2_blocks_per_stage"),
    pytest.param(lambda: resnet_pair(preact=True), id="ResNet-v2-2_blocks_per_stage"),
    pytest.param(densenet_pair, id="DenseNet-1_2_1_1_blocks-no_top-max"),
    pytest.param(efficientnet_pair, id="EfficientNet-width_0.5-depth_0.1"),
    pytest.param(mobilenet_pair, id="MobileNet-alpha_0.25"),
    pytest.param(named_pair("Xception", "xception", input_shape=(71, 71, 3), classes=5),
                 id="Xception-71x71"),
    pytest.param(named_pair("InceptionV3", "inception_v3", input_shape=(75, 75, 3),
                            include_top=False, pooling="avg"), id="InceptionV3-75x75-no_top"),
    pytest.param(inception_resnet_blocks_pair, id="InceptionResNetV2-blocks_35_17_8"),
    pytest.param(convnext_pair, id="ConvNeXt-1_2_1_1_blocks-8_to_32_channels"),
    pytest.param(named_pair("MobileNetV3Small", "mobilenet_v3", input_shape=(32, 32, 3),
                            alpha=0.75, classes=3), id="MobileNetV3Small-alpha_0.75"),
    pytest.param(efficientnet_v2_pair("efficientnetv2-b0", _V2_STAGES),
                 id="EfficientNetV2-b_preprocessing-3_stages"),
    pytest.param(efficientnet_v2_pair("efficientnetv2-s", _V2_STAGES),
                 id="EfficientNetV2-s_preprocessing-3_stages"),
    pytest.param(nasnet_pair, id="NASNet-1_block_per_group-96_filters"),
]


@pytest.mark.parametrize("make_pair", FAMILY_REPRESENTATIVES)
def test_family_builder_predicts_as_keras_on_keras_weights(make_pair, tmp_path):
    """Each family's builder (reduced to few blocks where Keras's generic builder
    allows it, so that the eager comparison stays cheap) against Keras's."""
    reference, build, module = make_pair()
    assert_predicts_as_keras(reference, build, module, tmp_path)


def case(name, module, **kwargs):
    return pytest.param(name, module, kwargs, id=name)


VARIANTS = [
    case("ResNet101", "resnet", include_top=False),
    case("ResNet50V2", "resnet_v2", input_shape=(32, 32, 3), classes=7),
    case("VGG19", "vgg19", input_shape=(32, 32, 3), classes=2),   # VGG16's builder
    case("DenseNet121", "densenet", input_shape=(32, 32, 3), classes=4),
    case("ResNet152", "resnet", input_shape=(64, 64, 3), classes=10),
    case("ResNet101V2", "resnet_v2", include_top=False, pooling="max"),
    case("ResNet152V2", "resnet_v2", include_top=False),
    case("DenseNet169", "densenet", include_top=False, pooling="avg"),
    case("DenseNet201", "densenet", include_top=False),
    *[case(f"EfficientNetB{i}", "efficientnet", include_top=False) for i in range(1, 8)],
    case("MobileNet", "mobilenet", include_top=False, depth_multiplier=2),
    case("InceptionV3", "inception_v3", input_shape=(75, 75, 3), classes=3),
    case("InceptionResNetV2", "inception_resnet_v2", include_top=False, pooling="max"),
    case("ConvNeXtTiny", "convnext", input_shape=(32, 32, 3), classes=3),
    *[case(f"ConvNeXt{size}", "convnext", include_top=False)
      for size in ("Small", "Base", "Large", "XLarge")],
    case("MobileNetV3Large", "mobilenet_v3", include_top=False, pooling="avg"),
    case("MobileNetV3Small", "mobilenet_v3", minimalistic=True, alpha=1.5),
    *[case(f"EfficientNetV2{size}", "efficientnet_v2", include_top=False)
      for size in ("B0", "B1", "B2", "B3", "S", "M", "L")],
    case("NASNetMobile", "nasnet", include_top=False, pooling="avg"),
    case("NASNetLarge", "nasnet", input_shape=(96, 96, 3), classes=3),
]


@pytest.mark.parametrize("name, module, kwargs", VARIANTS)
def test_variant_architecture_matches_keras(name, module, kwargs):
    if hasattr(getattr(keras.applications, module), name):   # not MobileNetV3's module
        assert getattr(getattr(loopax.applications, module), name) is \
            getattr(loopax.applications, name)
    reference = keras_model(name, randomize=False, **kwargs)
    assert_same_architecture(loopax_model(name, weights=None, **kwargs), reference)


def test_input_tensor_builds_on_the_given_symbolic_input():
    """`input_tensor=`: the model starts at the given tensor (its shape, not the
    default), as Keras's does."""
    kwargs = {"include_top": False, "pooling": "avg", "alpha": 0.25}
    reference = keras_model("MobileNet", randomize=False,
                            input_tensor=keras.Input((40, 48, 3)), **kwargs)
    inputs = loopax.Input((40, 48, 3))
    model = loopax_model("MobileNet", weights=None, input_tensor=inputs, **kwargs)
    assert model.inputs[0] is inputs
    assert_same_architecture(model, reference)


def test_convnext_stochastic_depth_and_layer_scale_as_keras():
    """Keras's ConvNeXt layers: StochasticDepth keeps or drops whole samples in
    training (kept ones scaled by 1 / keep) and is the identity in inference;
    LayerScale starts at `init_values`, as Keras's."""
    from keras.src.applications import convnext as keras_convnext

    from loopax.src.applications import convnext

    x = np.ones((256, 2, 2, 3), "float32")
    layer = convnext.StochasticDepth(0.25)
    np.testing.assert_array_equal(np.asarray(layer(x)), x)
    kept = np.asarray(layer(x, training=True))[:, 0, 0, 0]
    np.testing.assert_allclose(kept[kept > 0], 1 / 0.75, rtol=1e-6)
    assert 0.6 < np.mean(kept > 0) < 0.9
    ours, theirs = convnext.LayerScale(1e-6, 3), keras_convnext.LayerScale(1e-6, 3)
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=1e-6)
    assert ours.get_config()["init_values"] == theirs.get_config()["init_values"]
