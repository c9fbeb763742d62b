"""Xception (Chollet 2017): depthwise-separable convolutions with residual
connections (entry flow, eight middle-flow blocks, exit flow); layer names as
Keras's."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.applications import building
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.convolutional.depthwise import SeparableConv2D
from loopax.src.layers.merging.merging import add
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import MaxPooling2D


def _separable(x, filters, name, activate_first=True):
    """(ReLU) - 3x3 separable convolution - BN, named `{name}` / `{name}_bn`."""
    if activate_first:
        x = Activation("relu", name=f"{name}_act")(x)
    x = SeparableConv2D(filters, 3, padding="same", use_bias=False, name=name)(x)
    return BatchNormalization(axis=-1, name=f"{name}_bn")(x)


def _downsampling_block(x, filters, block, first_activation=True):
    """Two separable convolutions and a strided max pool, plus a strided 1x1
    projection of the input (Keras leaves the projection's layers auto-named)."""
    residual = Conv2D(filters[1], 1, strides=2, padding="same", use_bias=False)(x)
    residual = BatchNormalization(axis=-1)(residual)
    if first_activation:
        x = _separable(x, filters[0], f"block{block}_sepconv1")
    else:   # block 2: the stem's ReLU already ran
        x = SeparableConv2D(filters[0], 3, padding="same", use_bias=False,
                            name=f"block{block}_sepconv1")(x)
        x = BatchNormalization(axis=-1, name=f"block{block}_sepconv1_bn")(x)
    x = _separable(x, filters[1], f"block{block}_sepconv2")
    x = MaxPooling2D(3, strides=2, padding="same", name=f"block{block}_pool")(x)
    return add([x, residual])


@export("loopax.applications.Xception")
def Xception(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
             pooling=None, classes=1000, classifier_activation="softmax", name="xception"):
    inputs, _, weights = building.prepare("Xception", weights, include_top, classes, pooling,
                                          input_tensor, input_shape, 299, 71)
    x = Conv2D(32, 3, strides=2, use_bias=False, name="block1_conv1")(inputs)
    x = BatchNormalization(axis=-1, name="block1_conv1_bn")(x)
    x = Activation("relu", name="block1_conv1_act")(x)
    x = Conv2D(64, 3, use_bias=False, name="block1_conv2")(x)
    x = BatchNormalization(axis=-1, name="block1_conv2_bn")(x)
    x = Activation("relu", name="block1_conv2_act")(x)
    x = _downsampling_block(x, (128, 128), 2, first_activation=False)
    x = _downsampling_block(x, (256, 256), 3)
    x = _downsampling_block(x, (728, 728), 4)
    for block in range(5, 13):
        residual = x
        for conv in (1, 2, 3):
            x = _separable(x, 728, f"block{block}_sepconv{conv}")
        x = add([x, residual])
    x = _downsampling_block(x, (728, 1024), 13)
    for conv, filters in ((1, 1536), (2, 2048)):
        x = SeparableConv2D(filters, 3, padding="same", use_bias=False,
                            name=f"block14_sepconv{conv}")(x)
        x = BatchNormalization(axis=-1, name=f"block14_sepconv{conv}_bn")(x)
        x = Activation("relu", name=f"block14_sepconv{conv}_act")(x)
    x = building.classifier_head(x, include_top, pooling, classes, classifier_activation,
                                 ("avg_pool", "max_pool"))
    return building.finish(inputs, x, name, weights)


Xception.__doc__ = ("Xception on `(batch, height, width, 3)` images preprocessed with "
                    "`loopax.applications.xception.preprocess_input` (scaled to [-1, 1]); "
                    "default size 299, sides of at least 71." + building.ARGS_DOC)
