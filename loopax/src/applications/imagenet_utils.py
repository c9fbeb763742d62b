"""Shared parts of `loopax.applications`: input preprocessing modes, ImageNet
prediction decoding, input-shape checks and weight loading.

No function here downloads anything: ImageNet weights and the class index
are read from local paths (Keras's published files).
"""

from __future__ import annotations

import json
import os

import numpy as np

from loopax.src import config as _config
from loopax.src.saving import keras_format
from loopax.src.utils import file_utils

CAFFE_MEAN_BGR = (103.939, 116.779, 123.68)
TORCH_MEAN, TORCH_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def preprocess_input(x, data_format=None, mode="caffe"):
    """ImageNet preprocessing of RGB images in [0, 255] (NumPy or JAX, any
    float/int dtype; a batch or one image):

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
    data_format = data_format or _config.image_data_format()
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
    with open(path, encoding="utf-8") as f:
        index = json.load(f)
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


# Keras's published ImageNet weights: (URL folder, file with the top, without, and
# their md5 as Keras checks them; MobileNetV2's files name alpha and rows, unhashed).
_GCS = "https://storage.googleapis.com/"
PUBLISHED_WEIGHTS = {
    "ResNet50": (_GCS + "tensorflow/keras-applications/resnet/",
                 "resnet50_weights_tf_dim_ordering_tf_kernels.h5",
                 "2cb95161c43110f7111970584f804107",
                 "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5",
                 "4d473c1dd8becc155b73f8504c6f6626"),
    "VGG16": (_GCS + "tensorflow/keras-applications/vgg16/",
              "vgg16_weights_tf_dim_ordering_tf_kernels.h5",
              "64373286793e3c8b2b4e3219cbf3544b",
              "vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5",
              "6d6bbae143d832006294945121d1f1fc"),
    "EfficientNetB0": (_GCS + "keras-applications/",
                       "efficientnetb0.h5", "902e53a9f72be733fc0bcb005b3ebbac",
                       "efficientnetb0_notop.h5", "50bc09e76180e00e4465e1a485ddc09d"),
    "MobileNetV2": (_GCS + "tensorflow/keras-applications/mobilenet_v2/",
                    "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{alpha}_{rows}.h5", None,
                    "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{alpha}_{rows}_no_top.h5",
                    None),
}


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
    with open(path, "rb") as f, keras_format.open_h5(f, path) as h5file:
        if "layer_names" not in h5file.attrs:
            raise ValueError(f"{path}: not a Keras HDF5 weight file (no 'layer_names'); "
                             "name a Keras 3 weight file '*.weights.h5'.")
        load_legacy_h5(model, h5file, path)
    return model


def _text(values):
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values]


def load_legacy_h5(model, h5file, where):
    """Keras 2 / published-application HDF5 weights: one group per layer name
    (with a `weight_names` attribute), the weights in the layer's order."""
    by_name = {layer.name: layer for layer in model.layers if layer.weights}
    names = [n for n in _text(h5file.attrs["layer_names"]) if n in h5file]
    stored = {}
    for name in names:
        group = h5file[name]
        weight_names = _text(group.attrs.get("weight_names", []))
        if weight_names:
            stored[name] = [group[w] for w in weight_names]
    missing = sorted(set(by_name) - set(stored))
    unknown = sorted(set(stored) - set(by_name))
    if missing or unknown:
        raise ValueError(f"{where}: the file's layers do not match model {model.name!r}: "
                         f"without weights in the file {missing[:8]}, not in the model "
                         f"{unknown[:8]} (was the model built with the same include_top/"
                         "classes/input channels?).")
    assignments = []
    for name, datasets in stored.items():
        layer = by_name[name]
        if len(datasets) != len(layer.weights):
            raise ValueError(f"{where}: layer {name!r} has {len(datasets)} weights in the "
                             f"file but {len(layer.weights)} in the model.")
        for ds, var in zip(datasets, layer.weights):
            keras_format._check_dataset(ds, ds.name, where)
            if tuple(ds.shape) != tuple(var.shape):
                raise ValueError(f"{where}: weight {ds.name!r} has shape {ds.shape} in the "
                                 f"file but {tuple(var.shape)} in layer {name!r}.")
            assignments.append((var, ds[()]))
    for var, value in assignments:
        var.assign(np.asarray(value, dtype=var.dtype))
