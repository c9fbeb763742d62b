"""ResNet50 (He et al. 2015, "v1" with the stride in the first 1x1
convolution), layer names as Keras's so its weight files load."""

from __future__ import annotations

from loopax.src.applications import building, imagenet_utils
from loopax.src.layers.convolutional import Conv2D
from loopax.src.layers.core import Activation
from loopax.src.layers.merging import Add
from loopax.src.layers.normalization import BatchNormalization
from loopax.src.layers.pooling import MaxPooling2D
from loopax.src.layers.reshaping import ZeroPadding2D

_EPSILON = 1.001e-5


def _bn(name):
    return BatchNormalization(axis=3, epsilon=_EPSILON, name=name)


def bottleneck_block(x, filters, stride=1, project_shortcut=True, name=None):
    """1x1 (`filters`, `stride`) -> 3x3 -> 1x1 (`4 * filters`) plus the
    shortcut (a strided 1x1 projection when `project_shortcut`)."""
    if project_shortcut:
        shortcut = Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = _bn(f"{name}_0_bn")(shortcut)
    else:
        shortcut = x
    x = Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(x)
    x = _bn(f"{name}_1_bn")(x)
    x = Activation("relu", name=f"{name}_1_relu")(x)
    x = Conv2D(filters, 3, padding="same", name=f"{name}_2_conv")(x)
    x = _bn(f"{name}_2_bn")(x)
    x = Activation("relu", name=f"{name}_2_relu")(x)
    x = Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    x = _bn(f"{name}_3_bn")(x)
    x = Add(name=f"{name}_add")([shortcut, x])
    return Activation("relu", name=f"{name}_out")(x)


def stage(x, filters, blocks, stride=2, name=None):
    x = bottleneck_block(x, filters, stride=stride, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = bottleneck_block(x, filters, project_shortcut=False, name=f"{name}_block{i}")
    return x


def ResNet50(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
             pooling=None, classes=1000, classifier_activation="softmax", name="resnet50"):
    """ResNet50 on `(batch, height, width, 3)` images preprocessed with
    `loopax.applications.resnet50.preprocess_input` ("caffe" mode).
    `weights`: None or the path of Keras's weight file (nothing is downloaded).

    Args:
        include_top: Whether to end with the ImageNet classifier (default True);
            False ends at the last convolution block (see `pooling`).
        weights: "imagenet" (the default, as in Keras): Keras's published ImageNet
            file, downloaded once into `$LOOPAX_HOME/models` and hash-checked;
            None: random initialization; or a local path (a published file,
            a `.weights.h5` or a `.keras` file).
        input_tensor: A symbolic tensor (from `loopax.Input`) to build on, or None.
        input_shape: `(height, width, channels)`, or None: `(224, 224, 3)` with
            `include_top`, else `(None, None, 3)`; sides of at least 32, and 3
            channels with pretrained weights.
        pooling: Without the top: None (4-D feature maps), `"avg"` or `"max"` (global
            pooling to `(batch, channels)`).
        classes: The number of classes of the top (default 1000).
        classifier_activation: The top's activation (default `"softmax"`; None gives
            logits).
        name: The model's name (default "resnet50").

    Returns:
        A functional `Model`: `(batch, height, width, 3)` float images ->
        `(batch, classes)` with the top, else the features.

    Raises:
        OSError: the ImageNet file could not be downloaded (pass a local path).
        ValueError: a bad argument: a missing weights file, an unknown
            `pooling`, non-positive `classes`, or an `input_shape` that does not fit.
    """
    imagenet_utils.check_arguments(weights, include_top, classes, pooling, "ResNet50")
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 224, 32, include_top,
                                                    weights, "ResNet50")
    weights = imagenet_utils.resolve_weights(weights, "ResNet50", include_top)
    inputs = building.image_input(input_tensor, input_shape)
    x = ZeroPadding2D(((3, 3), (3, 3)), name="conv1_pad")(inputs)
    x = Conv2D(64, 7, strides=2, name="conv1_conv")(x)
    x = _bn("conv1_bn")(x)
    x = Activation("relu", name="conv1_relu")(x)
    x = ZeroPadding2D(((1, 1), (1, 1)), name="pool1_pad")(x)
    x = MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stage(x, 64, 3, stride=1, name="conv2")
    x = stage(x, 128, 4, name="conv3")
    x = stage(x, 256, 6, name="conv4")
    x = stage(x, 512, 3, name="conv5")
    x = building.classifier_head(x, include_top, pooling, classes, classifier_activation,
                                 ("avg_pool", "max_pool"))
    return building.finish(inputs, x, name, weights)


def preprocess_input(x, data_format=None):
    """RGB -> BGR and minus the ImageNet mean per channel, as ResNet50 expects.

    `imagenet_utils.preprocess_input` in "caffe" mode.

    Args:
        x: RGB images in [0, 255], a batch or one image (NumPy or JAX, any float or
            int dtype; ints are cast to `floatx()`).
        data_format: `"channels_last"` or `"channels_first"`; None is
            `loopax.config.image_data_format()`.

    Returns:
        The preprocessed images, same shape, a float array of the same kind (NumPy or
        JAX).
    """
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5, class_index_path=None):
    """`[[(class_id, class_name, score), ...] per sample]`, the `top` best of
    `(batch, 1000)` ImageNet predictions (`imagenet_utils.decode_predictions`).

    Args:
        preds: `(batch, 1000)` scores (a NumPy or JAX array).
        top: How many classes per sample (default 5).
        class_index_path: Keras's `imagenet_class_index.json`; None (the default) is
            `~/.keras/models/imagenet_class_index.json`.

    Returns:
        A list (one per sample) of `top` `(class_id, class_name, score)` tuples, best
        first.

    Raises:
        ValueError: `preds` is not of shape `(batch, 1000)`.
        FileNotFoundError: the class index file does not exist (nothing is downloaded).
    """
    return imagenet_utils.decode_predictions(preds, top, class_index_path)
