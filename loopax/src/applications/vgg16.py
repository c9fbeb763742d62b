"""VGG16 (Simonyan & Zisserman 2014), layer names as Keras's."""

from __future__ import annotations

from loopax.src.applications import building, imagenet_utils
from loopax.src.layers.convolutional import Conv2D
from loopax.src.layers.core import Dense, Flatten
from loopax.src.layers.pooling import GlobalAveragePooling2D, GlobalMaxPooling2D, MaxPooling2D

_BLOCKS = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))


def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg16"):
    """VGG16: five blocks of 3x3 convolutions and 2x2 max pooling; with
    `include_top`, Flatten + two Dense(4096) + Dense(`classes`). Inputs
    preprocessed with `loopax.applications.vgg16.preprocess_input`."""
    imagenet_utils.check_arguments(weights, include_top, classes, pooling, "VGG16")
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 224, 32, include_top,
                                                    weights, "VGG16")
    inputs = building.image_input(input_tensor, input_shape)
    x = inputs
    for block, (filters, convs) in enumerate(_BLOCKS, start=1):
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
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5, class_index_path=None):
    return imagenet_utils.decode_predictions(preds, top, class_index_path)
