"""Shared parts of `loopax.applications`: input preprocessing modes, ImageNet
prediction decoding, input-shape checks and weight loading.

No function here downloads anything: ImageNet weights and the class index
are read from local paths (Keras's published files).
"""

from __future__ import annotations

import os

import numpy as np

from loopax.src import config as _config
from loopax.src.saving import keras_format
from loopax.src.tensor import op
from loopax.src.utils import file_utils, safe_open

CAFFE_MEAN_BGR = (103.939, 116.779, 123.68)
TORCH_MEAN, TORCH_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def preprocess_input(x, data_format=None, mode="caffe"):
    """ImageNet preprocessing of RGB images in [0, 255] (NumPy or JAX, any
    float/int dtype; a batch or one image; or a symbolic tensor, e.g. a
    `loopax.Input`, inside a functional model, as Keras):

    - "caffe": RGB -> BGR, minus the ImageNet mean per channel (ResNet, VGG);
    - "tf": scaled to [-1, 1] (MobileNetV2);
    - "torch": scaled to [0, 1], minus mean, divided by std per channel.

    Args:
        x: RGB images in [0, 255]; integer inputs are cast to `floatx()`.
        data_format: `"channels_last"` or `"channels_first"`; None is
            `loopax.config.image_data_format()`.
        mode: `"caffe"` (the default), `"tf"` or `"torch"`.

    Returns:
        The preprocessed images, same shape, a float array of the same kind (NumPy or
        JAX).

    Raises:
        ValueError: an unknown `mode`.
    """
    if mode not in ("caffe", "tf", "torch"):
        raise ValueError(f"preprocess_input: `mode` must be 'caffe', 'tf' or 'torch', "
                         f"got {mode!r}.")
    return _preprocess(x, data_format or _config.image_data_format(), mode)


@op
def _preprocess(x, data_format, mode):
    # A loopax op, so that on a symbolic tensor (`preprocess_input(keras.Input(...))`
    # inside a functional model, as Keras builds it from its ops) it becomes a
    # node of the graph.
    is_numpy = isinstance(x, np.ndarray)
    xp = np if is_numpy else __import__("jax.numpy", fromlist=["numpy"])
    x = xp.asarray(x)
    if not xp.issubdtype(x.dtype, xp.floating):
        x = x.astype(_config.floatx())
    if mode == "tf":
        return x / 127.5 - 1.0
    channel_axis = -1 if data_format == "channels_last" else (-3 if x.ndim >= 3 else 0)
    shape = [1] * x.ndim
    shape[channel_axis] = 3
    if mode == "torch":
        mean = xp.asarray(TORCH_MEAN, x.dtype).reshape(shape)
        std = xp.asarray(TORCH_STD, x.dtype).reshape(shape)
        return (x / 255.0 - mean) / std
    x = xp.flip(x, axis=channel_axis)
    return x - xp.asarray(CAFFE_MEAN_BGR, x.dtype).reshape(shape)


CLASS_INDEX_URL = ("https://storage.googleapis.com/download.tensorflow.org/"
                   "data/imagenet_class_index.json")
CLASS_INDEX_MD5 = "c2c37ea517e94d9795004a39431a14cb"


def default_class_index_path():
    """Where `decode_predictions` looks for the class index without a path: Keras's
    cached copy (`~/.keras/models`), else `$LOOPAX_HOME/models` (nothing is downloaded)."""
    keras_copy = os.path.join(os.path.expanduser("~"), ".keras", "models",
                              "imagenet_class_index.json")
    if os.path.exists(keras_copy):
        return keras_copy
    return os.path.join(file_utils.loopax_home(), "models", "imagenet_class_index.json")


def decode_predictions(preds, top=5, class_index_path=None):
    """`[[(class_id, class_name, score), ...] per sample]`, the `top` best of
    `(batch, 1000)` ImageNet predictions. The class index is Keras's
    `imagenet_class_index.json`, read from `class_index_path` (default: Keras's
    cache, `~/.keras/models/imagenet_class_index.json`, else
    `$LOOPAX_HOME/models/imagenet_class_index.json`); nothing is downloaded.

    Args:
        preds: `(batch, 1000)` scores (a NumPy or JAX array).
        top: How many classes per sample (default 5).
        class_index_path: The class index file, or None for the default.

    Returns:
        A list (one per sample) of `top` `(class_id, class_name, score)` tuples, best
        first.

    Raises:
        ValueError: `preds` is not of shape `(batch, 1000)`.
        FileNotFoundError: the class index file does not exist (the message says
            where to get it and where to put it).
    """
    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError(f"decode_predictions expects a batch of ImageNet predictions of "
                         f"shape (samples, 1000); got shape {preds.shape}.")
    path = class_index_path or default_class_index_path()
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"decode_predictions: the ImageNet class index {path!r} does not exist "
            "(loopax downloads nothing). Download Keras's imagenet_class_index.json from "
            f"{CLASS_INDEX_URL} (md5 {CLASS_INDEX_MD5}) and pass its path as "
            f"class_index_path=..., or save it as {default_class_index_path()!r}.")
    index = safe_open.read_json(path, 16 * 2**20, "the ImageNet class index")   # real: 35 kB
    results = []
    for row in preds:
        best = np.argsort(row)[::-1][:top]
        results.append([(*index[str(i)], float(row[i])) for i in best])
    return results


def correct_pad(input_size, kernel_size):
    """ZeroPadding2D padding that makes a stride-2 'valid' convolution act as
    TensorFlow's 'same' on `input_size = (height, width)`."""
    kernel = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    adjust = (1, 1) if input_size[0] is None else (1 - input_size[0] % 2,
                                                   1 - input_size[1] % 2)
    return ((kernel[0] // 2 - adjust[0], kernel[0] // 2),
            (kernel[1] // 2 - adjust[1], kernel[1] // 2))


def obtain_input_shape(input_shape, default_size, min_size, require_flatten, weights,
                       owner):
    """The model's input shape (channels last): `input_shape` checked (3
    channels with ImageNet weights, sides >= `min_size`), or the default."""
    if weights == "imagenet" and require_flatten and input_shape is not None \
            and tuple(input_shape) != (default_size, default_size, 3):
        raise ValueError(f"{owner}: with include_top=True and ImageNet weights, "
                         f"`input_shape` must be {(default_size, default_size, 3)}; "
                         f"got {input_shape}.")
    if input_shape is None:
        return (default_size, default_size, 3) if require_flatten else (None, None, 3)
    input_shape = tuple(input_shape)
    if len(input_shape) != 3:
        raise ValueError(f"{owner}: `input_shape` must be (height, width, channels); "
                         f"got {input_shape}.")
    if weights is not None and input_shape[-1] != 3:
        raise ValueError(f"{owner}: pretrained weights need 3 input channels; "
                         f"got input_shape={input_shape}.")
    if any(s is not None and s < min_size for s in input_shape[:2]):
        raise ValueError(f"{owner}: input height and width must be at least {min_size}; "
                         f"got input_shape={input_shape}.")
    if require_flatten and None in input_shape[:2]:
        raise ValueError(f"{owner}: with include_top=True the input height and width must "
                         f"be known; got input_shape={input_shape}.")
    return input_shape


# Keras's published ImageNet weights: (URL folder, file with the top, its md5/sha256
# as Keras checks it, file without the top, its hash). Files whose names carry
# fields ({alpha}, {rows}) are formatted by `resolve_weights`; None: Keras
# publishes no hash for them.
_GCS = "https://storage.googleapis.com/"
_APPS = _GCS + "tensorflow/keras-applications/"
_TF_KERNELS = "{0}_weights_tf_dim_ordering_tf_kernels.h5"
_TF_KERNELS_NOTOP = "{0}_weights_tf_dim_ordering_tf_kernels_notop.h5"


def _tf_kernels(folder, stem, top_hash, notop_hash):
    return (_APPS + folder, _TF_KERNELS.format(stem), top_hash,
            _TF_KERNELS_NOTOP.format(stem), notop_hash)


def _named(folder, stem, top_hash, notop_hash):
    return (folder, f"{stem}.h5", top_hash, f"{stem}_notop.h5", notop_hash)


PUBLISHED_WEIGHTS = {
    "ResNet50": _tf_kernels("resnet/", "resnet50", "2cb95161c43110f7111970584f804107",
                            "4d473c1dd8becc155b73f8504c6f6626"),
    "ResNet101": _tf_kernels("resnet/", "resnet101", "f1aeb4b969a6efcfb50fad2f0c20cfc5",
                             "88cf7a10940856eca736dc7b7e228a21"),
    "ResNet152": _tf_kernels("resnet/", "resnet152", "100835be76be38e30d865e96f2aaae62",
                             "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    "ResNet50V2": _tf_kernels("resnet/", "resnet50v2", "3ef43a0b657b3be2300d5770ece849e0",
                              "fac2f116257151a9d068a22e544a4917"),
    "ResNet101V2": _tf_kernels("resnet/", "resnet101v2", "6343647c601c52e1368623803854d971",
                               "c0ed64b8031c3730f411d2eb4eea35b5"),
    "ResNet152V2": _tf_kernels("resnet/", "resnet152v2", "a49b44d1979771252814e80f8ec446f9",
                               "ed17cf2e0169df9d443503ef94b23b33"),
    "VGG16": _tf_kernels("vgg16/", "vgg16", "64373286793e3c8b2b4e3219cbf3544b",
                         "6d6bbae143d832006294945121d1f1fc"),
    "VGG19": _tf_kernels("vgg19/", "vgg19", "cbe5617147190e668d6c5d5026f83318",
                         "253f8cb515780f3b799900260a226db6"),
    "Xception": _tf_kernels("xception/", "xception", "0a58e3b7378bc2990ea3b43d5981f1f6",
                            "b0042744bf5b25fce3cb969f33bebb97"),
    "InceptionV3": _tf_kernels("inception_v3/", "inception_v3",
                               "9a0d58056eeedaa3f26cb7ebd46da564",
                               "bcbd6486424b2319ff4ef7d526e38f63"),
    "InceptionResNetV2": _tf_kernels("inception_resnet_v2/", "inception_resnet_v2",
                                     "e693bd0210a403b3192acc6073ad2e96",
                                     "d19885ff4a710c122648d3b5c3b684e4"),
    "DenseNet121": _tf_kernels("densenet/", "densenet121", "9d60b8095a5708f2dcce2bca79d332c7",
                               "30ee3e1110167f948a6b9946edeeb738"),
    "DenseNet169": _tf_kernels("densenet/", "densenet169", "d699b8f76981ab1b30698df4c175e90b",
                               "b8c4d4c20dd625c148057b9ff1c1176b"),
    "DenseNet201": _tf_kernels("densenet/", "densenet201", "1ceb130c1ea1b78c3bf6114dbdfd8807",
                               "c13680b51ded0fb44dff2d8f86ac8bb1"),
    "MobileNet": (_APPS + "mobilenet/", "mobilenet_{alpha}_{rows}_tf.h5", None,
                  "mobilenet_{alpha}_{rows}_tf_no_top.h5", None),
    "MobileNetV2": (_APPS + "mobilenet_v2/",
                    "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{alpha}_{rows}.h5", None,
                    "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{alpha}_{rows}_no_top.h5",
                    None),
    "NASNetMobile": (_APPS + "nasnet/", "NASNet-mobile.h5", "020fb642bf7360b370c678b08e0adf61",
                     "NASNet-mobile-no-top.h5", "1ed92395b5b598bdda52abe5c0dbfd63"),
    "NASNetLarge": (_APPS + "nasnet/", "NASNet-large.h5", "11577c9a518f0070763c2b964a382f17",
                    "NASNet-large-no-top.h5", "d81d89dc07e6e56530c4e77faddd61b5"),
}
_EFFICIENTNET_HASHES = {
    "B0": ("902e53a9f72be733fc0bcb005b3ebbac", "50bc09e76180e00e4465e1a485ddc09d"),
    "B1": ("1d254153d4ab51201f1646940f018540", "74c4e6b3e1f6a1eea24c589628592432"),
    "B2": ("b15cce36ff4dcbd00b6dd88e7857a6ad", "111f8e2ac8aa800a7a99e3239f7bfb39"),
    "B3": ("ffd1fdc53d0ce67064dc6a9c7960ede0", "af6d107764bb5b1abb91932881670226"),
    "B4": ("18c95ad55216b8f92d7e70b3a046e2fc", "ebc24e6d6c33eaebbd558eafbeedf1ba"),
    "B5": ("ace28f2a6363774853a83a0b21b9421a", "38879255a25d3c92d5e44e04ae6cec6f"),
    "B6": ("165f6e37dce68623721b423839de8be5", "9ecce42647a20130c1f39a5d4cb75743"),
    "B7": ("8c03f828fec3ef71311cd463b6759d99", "cbcfe4450ddf6f3ad90b1b398090fe4a"),
}
_EFFICIENTNET_V2_HASHES = {
    "B0": ("21ecbf6da12460d5c40bb2f29ceb2188", "893217f2bb855e2983157299931e43ff"),
    "B1": ("069f0534ff22adf035c89e2d9547a9dc", "0e80663031ca32d657f9caa404b6ec37"),
    "B2": ("424e49f28180edbde1e94797771950a7", "1dfe2e7a5d45b6632553a8961ea609eb"),
    "B3": ("1f1fc43bd98a6e4fd8fdfd551e02c7a0", "f6abf7b5849ac99a89b50dd3fd532856"),
    "S": ("e1d88a8495beba45748fedd0cecbe016", "af0682fb74e8c54910f2d4393339c070"),
    "M": ("a3bf6aa3276309f4fc6a34aa114c95cd", "1b8dc055df72dde80d614482840fe342"),
    "L": ("27e6d408b53c7ebc868fefa357689935", "b0b66b5c863aef5b46e8608fe1711615"),
}
_CONVNEXT_HASHES = {
    "Tiny": ("8ae6e78ce2933352b1ef4008e6dd2f17bc40771563877d156bc6426c7cf503ff",
             "d547c096cabd03329d7be5562c5e14798aa39ed24b474157cef5e85ab9e49ef1"),
    "Small": ("ce1277d8f1ee5a0ef0e171469089c18f5233860ceaf9b168049cb9263fd7483c",
              "6fc8009faa2f00c1c1dfce59feea9b0745eb260a7dd11bee65c8e20843da6eab"),
    "Base": ("52cbb006d3dadd03f6e095a8ca1aca47aecdd75acb4bc74bce1f5c695d0086e6",
             "40a20c5548a5e9202f69735ecc06c990e6b7c9d2de39f0361e27baeb24cb7c45"),
    "Large": ("070c5ed9ed289581e477741d3b34beffa920db8cf590899d6d2c67fba2a198a6",
              "96f02b6f0753d4f543261bc9d09bed650f24dd6bc02ddde3066135b63d23a1cd"),
    "XLarge": ("c1f5ccab661354fc3a79a10fa99af82f0fbf10ec65cb894a3ae0815f17a889ee",
               "de3f8a54174130e0cecdc71583354753d557fcf1f4487331558e2a16ba0cfe05"),
}
# MobileNetV3: the file names the model type, minimalism and alpha.
_MOBILENET_V3_HASHES = {
    "large_224_0.75_float": ("765b44a33ad4005b3ac83185abf1d0eb",
                             "40af19a13ebea4e2ee0c676887f69a2e"),
    "large_224_1.0_float": ("59e551e166be033d707958cf9e29a6a7",
                            "07fb09a5933dd0c8eaafa16978110389"),
    "large_minimalistic_224_1.0_float": ("675e7b876c45c57e9e63e6d90a36599c",
                                         "ec5221f64a2f6d1ef965a614bdae7973"),
    "small_224_0.75_float": ("cb65d4e5be93758266aa0a7f2c6708b7",
                             "ebdb5cc8e0b497cd13a7c275d475c819"),
    "small_224_1.0_float": ("8768d4c2e7dee89b9d02b2d03d65d862",
                            "d3e8ec802a04aa4fc771ee12a9a9b836"),
    "small_minimalistic_224_1.0_float": ("99cd97fb2fcdad2bf028eb838de69e37",
                                         "cde8136e733e811080d9fcd8a252f7e4"),
}
for _size, (_top, _notop) in _EFFICIENTNET_HASHES.items():
    PUBLISHED_WEIGHTS[f"EfficientNet{_size}"] = _named(
        _GCS + "keras-applications/", f"efficientnet{_size.lower()}", _top, _notop)
for _size, (_top, _notop) in _EFFICIENTNET_V2_HASHES.items():
    _stem = "efficientnetv2-" + _size.lower()
    PUBLISHED_WEIGHTS[f"EfficientNetV2{_size}"] = _named(_APPS + "efficientnet_v2/", _stem,
                                                         _top, _notop)
for _size, (_top, _notop) in _CONVNEXT_HASHES.items():
    PUBLISHED_WEIGHTS[f"ConvNeXt{_size}"] = _named(_APPS + "convnext/",
                                                   f"convnext_{_size.lower()}", _top, _notop)
for _model, (_top, _notop) in _MOBILENET_V3_HASHES.items():
    PUBLISHED_WEIGHTS[f"MobileNetV3/{_model}"] = (
        _APPS + "mobilenet_v3/", f"weights_mobilenet_v3_{_model}.h5", _top,
        f"weights_mobilenet_v3_{_model}_no_top_v2.h5", _notop)


def resolve_weights(weights, owner, include_top, **name_fields):
    """`weights` as a local path: "imagenet" is Keras's published file for `owner`,
    downloaded once into `$LOOPAX_HOME/models` (hash-checked where Keras has the
    hash); a path or None is returned as it is.

    Raises:
        OSError: the download failed (the message says how to pass a local file).
        ValueError: the downloaded file does not match Keras's hash.
    """
    if weights != "imagenet":
        return weights
    folder, top, top_hash, notop, notop_hash = PUBLISHED_WEIGHTS[owner]
    name, file_hash = (top, top_hash) if include_top else (notop, notop_hash)
    name = name.format(**name_fields)
    return file_utils.get_file(name, folder + name, file_hash=file_hash, cache_subdir="models")


def check_arguments(weights, include_top, classes, pooling, owner):
    if not (weights in ("imagenet", None) or isinstance(weights, (str, os.PathLike))):
        raise ValueError(f"{owner}: `weights` must be None, 'imagenet' or a file path; "
                         f"got {weights!r}.")
    if weights not in (None, "imagenet") and not os.path.exists(weights):
        raise ValueError(f"{owner}: the weights file {os.fspath(weights)!r} does not exist.")
    if pooling not in (None, "avg", "max"):
        raise ValueError(f"{owner}: `pooling` must be None, 'avg' or 'max'; got {pooling!r}.")
    if not isinstance(classes, int) or classes < 1:
        raise ValueError(f"{owner}: `classes` must be a positive int; got {classes!r}.")


def load_application_weights(model, path):
    """Loads Keras weights into an application model: Keras's published
    ImageNet files (the legacy HDF5 layout, by layer name) or a Keras 3
    `.weights.h5` / `.keras` file (by layer order)."""
    path = os.fspath(path)
    if path.endswith(".weights.h5") or path.endswith(".keras"):
        model.load_weights(path)
        return model
    with safe_open.open_regular(path, "a Keras weights file") as f, \
            keras_format.open_h5(f, path) as h5file:
        if "layer_names" not in h5file.attrs:
            raise ValueError(f"{path}: not a Keras HDF5 weight file (no 'layer_names'); "
                             "name a Keras 3 weight file '*.weights.h5'.")
        load_legacy_h5(model, h5file, path)
    return model


def _text(values):
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values]


def load_legacy_h5(model, h5file, where):
    """Keras 2 / published-application HDF5 weights: one group per layer name
    (with a `weight_names` attribute), the weights in the layer's order. Matched
    by layer name when the names agree; otherwise by order of the layers with
    weights, as Keras loads them (the published files of InceptionV3, Xception,
    NASNet, ... name many layers by Keras 2's counters, `conv2d_1`, ...)."""
    weighted = [layer for layer in model.layers if layer.weights]
    by_name = {layer.name: layer for layer in weighted}
    names = [n for n in _text(h5file.attrs["layer_names"]) if n in h5file]
    stored = {}
    for name in names:
        group = h5file[name]
        weight_names = _text(group.attrs.get("weight_names", []))
        if weight_names:
            stored[name] = [group[w] for w in weight_names]
    missing = sorted(set(by_name) - set(stored))
    unknown = sorted(set(stored) - set(by_name))
    if not missing and not unknown:
        pairs = [(by_name[name], name, datasets) for name, datasets in stored.items()]
    elif len(stored) == len(weighted):
        pairs = [(layer, name, datasets)
                 for layer, (name, datasets) in zip(weighted, stored.items())]
    else:
        raise ValueError(f"{where}: the file's layers do not match model {model.name!r}: "
                         f"{len(stored)} layers with weights in the file, {len(weighted)} in "
                         f"the model; by name, without weights in the file {missing[:8]}, "
                         f"not in the model {unknown[:8]} (was the model built with the "
                         "same include_top/classes/input channels?).")
    assignments = []
    for layer, name, datasets in pairs:
        if len(datasets) != len(layer.weights):
            raise ValueError(f"{where}: layer {name!r} has {len(datasets)} weights in the "
                             f"file but layer {layer.name!r} has {len(layer.weights)}.")
        for ds, var in zip(datasets, layer.weights):
            keras_format._check_dataset(ds, ds.name, where)
            if tuple(ds.shape) != tuple(var.shape):
                raise ValueError(f"{where}: weight {ds.name!r} has shape {ds.shape} in the "
                                 f"file but {tuple(var.shape)} in layer {layer.name!r}.")
            assignments.append((var, ds[()]))
    for var, value in assignments:
        var.assign(np.asarray(value, dtype=var.dtype))
