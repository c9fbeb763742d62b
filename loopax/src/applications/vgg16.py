"""VGG16 and VGG19 (Simonyan & Zisserman 2014), one builder; layer names as
Keras's."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.applications import building, imagenet_utils
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.core.dense import Dense
from loopax.src.layers.pooling.pooling import (
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    MaxPooling2D,
)
from loopax.src.layers.reshaping.flatten import Flatten

# (filters, convolutions) per block
BLOCKS = {16: ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)),
          19: ((64, 2), (128, 2), (256, 4), (512, 4), (512, 4))}


@export("loopax.applications.VGG16")
def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg16"):
    """VGG16: five blocks of 3x3 convolutions and 2x2 max pooling; with
    `include_top`, Flatten + two Dense(4096) + Dense(`classes`). Inputs
    preprocessed with `loopax.applications.vgg16.preprocess_input`.

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
        name: The model's name (default "vgg16").

    Returns:
        A functional `Model`: `(batch, height, width, 3)` float images ->
        `(batch, classes)` with the top, else the features.

    Raises:
        OSError: the ImageNet file could not be downloaded (pass a local path).
        ValueError: a bad argument: a missing weights file, an unknown
            `pooling`, non-positive `classes`, or an `input_shape` that does not fit.
    """
    return build_vgg(16, include_top, weights, input_tensor, input_shape, pooling, classes,
                     classifier_activation, name)


@export("loopax.applications.VGG19")
def VGG19(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg19"):
    return build_vgg(19, include_top, weights, input_tensor, input_shape, pooling, classes,
                     classifier_activation, name)


VGG19.__doc__ = ("VGG19: VGG16 with four convolutions in blocks 3-5, on images preprocessed "
                 "with `loopax.applications.vgg19.preprocess_input`." + building.ARGS_DOC)


def build_vgg(depth, include_top, weights, input_tensor, input_shape, pooling, classes,
              classifier_activation, name):
    owner = f"VGG{depth}"
    imagenet_utils.check_arguments(weights, include_top, classes, pooling, owner)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 224, 32, include_top,
                                                    weights, owner)
    weights = imagenet_utils.resolve_weights(weights, owner, include_top)
    inputs = building.image_input(input_tensor, input_shape)
    x = inputs
    for block, (filters, convs) in enumerate(BLOCKS[depth], start=1):
        for conv in range(1, convs + 1):
            x = Conv2D(filters, 3, activation="relu", padding="same",
                       name=f"block{block}_conv{conv}")(x)
        x = MaxPooling2D(2, strides=2, name=f"block{block}_pool")(x)
    if include_top:
        x = Flatten(name="flatten")(x)
        x = Dense(4096, activation="relu", name="fc1")(x)
        x = Dense(4096, activation="relu", name="fc2")(x)
        x = Dense(classes, activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = GlobalMaxPooling2D()(x)
    return building.finish(inputs, x, name, weights)


def preprocess_input(x, data_format=None):
    """RGB -> BGR and minus the ImageNet mean per channel, as VGG16 expects.

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
