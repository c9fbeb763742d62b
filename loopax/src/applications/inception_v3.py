"""InceptionV3 (Szegedy et al. 2016): a convolution stem, then "mixed" modules
of parallel branches concatenated along channels; layers created in Keras's
order (most are auto-named, so the order is what maps Keras's weight files)."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.applications import building
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.merging.merging import concatenate
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import AveragePooling2D, MaxPooling2D


def conv2d_bn(x, filters, rows, cols, padding="same", strides=1, name=None):
    """Conv2D (no bias) - BatchNormalization (no scale) - ReLU."""
    x = Conv2D(filters, (rows, cols), strides=strides, padding=padding, use_bias=False,
               name=None if name is None else f"{name}_conv")(x)
    x = BatchNormalization(axis=3, scale=False,
                           name=None if name is None else f"{name}_bn")(x)
    return Activation("relu", name=name)(x)


def chain(x, convs):
    """`conv2d_bn` after `conv2d_bn`: `convs` are `(filters, rows, cols)`."""
    for filters, rows, cols in convs:
        x = conv2d_bn(x, filters, rows, cols)
    return x


def _pool_branch(x, filters):
    x = AveragePooling2D(3, strides=1, padding="same")(x)
    return conv2d_bn(x, filters, 1, 1)


def module_35(x, pool_filters, name):
    """mixed0-2: 1x1, 1x1-5x5, 1x1-3x3-3x3 and pool-1x1 branches."""
    return concatenate([conv2d_bn(x, 64, 1, 1),
                        chain(x, [(48, 1, 1), (64, 5, 5)]),
                        chain(x, [(64, 1, 1), (96, 3, 3), (96, 3, 3)]),
                        _pool_branch(x, pool_filters)], axis=3, name=name)


def module_17(x, width, name):
    """mixed4-7: factorized 7x7 branches of `width` channels."""
    return concatenate([
        conv2d_bn(x, 192, 1, 1),
        chain(x, [(width, 1, 1), (width, 1, 7), (192, 7, 1)]),
        chain(x, [(width, 1, 1), (width, 7, 1), (width, 1, 7), (width, 7, 1), (192, 1, 7)]),
        _pool_branch(x, 192)], axis=3, name=name)


def module_8(x, index):
    """mixed9/10: 1x1, split 1x3|3x1 and 3x3-split branches, pool-1x1."""
    branch1x1 = conv2d_bn(x, 320, 1, 1)
    branch3x3 = conv2d_bn(x, 384, 1, 1)
    branch3x3 = concatenate([conv2d_bn(branch3x3, 384, 1, 3), conv2d_bn(branch3x3, 384, 3, 1)],
                            axis=3, name=f"mixed9_{index}")
    double = chain(x, [(448, 1, 1), (384, 3, 3)])
    double = concatenate([conv2d_bn(double, 384, 1, 3), conv2d_bn(double, 384, 3, 1)], axis=3)
    return concatenate([branch1x1, branch3x3, double, _pool_branch(x, 192)], axis=3,
                       name=f"mixed{9 + index}")


@export("loopax.applications.InceptionV3")
def InceptionV3(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name="inception_v3"):
    inputs, _, weights = building.prepare("InceptionV3", weights, include_top, classes,
                                          pooling, input_tensor, input_shape, 299, 75)
    x = conv2d_bn(inputs, 32, 3, 3, strides=2, padding="valid")
    x = conv2d_bn(x, 32, 3, 3, padding="valid")
    x = conv2d_bn(x, 64, 3, 3)
    x = MaxPooling2D(3, strides=2)(x)
    x = conv2d_bn(x, 80, 1, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, 3, padding="valid")
    x = MaxPooling2D(3, strides=2)(x)
    for index, pool_filters in enumerate((32, 64, 64)):
        x = module_35(x, pool_filters, f"mixed{index}")
    x = concatenate([conv2d_bn(x, 384, 3, 3, strides=2, padding="valid"),
                     conv2d_bn(chain(x, [(64, 1, 1), (96, 3, 3)]), 96, 3, 3, strides=2,
                               padding="valid"),
                     MaxPooling2D(3, strides=2)(x)], axis=3, name="mixed3")
    for index, width in zip((4, 5, 6, 7), (128, 160, 160, 192)):
        x = module_17(x, width, f"mixed{index}")
    x = concatenate([conv2d_bn(conv2d_bn(x, 192, 1, 1), 320, 3, 3, strides=2, padding="valid"),
                     conv2d_bn(chain(x, [(192, 1, 1), (192, 1, 7), (192, 7, 1)]), 192, 3, 3,
                               strides=2, padding="valid"),
                     MaxPooling2D(3, strides=2)(x)], axis=3, name="mixed8")
    for index in range(2):
        x = module_8(x, index)
    x = building.classifier_head(x, include_top, pooling, classes, classifier_activation,
                                 ("avg_pool", None) if include_top else (None, None))
    return building.finish(inputs, x, name, weights)


InceptionV3.__doc__ = ("InceptionV3 on `(batch, height, width, 3)` images preprocessed with "
                       "`loopax.applications.inception_v3.preprocess_input` (scaled to "
                       "[-1, 1]); default size 299, sides of at least 75." + building.ARGS_DOC)
