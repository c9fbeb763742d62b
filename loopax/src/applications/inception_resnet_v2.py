"""InceptionResNetV2 (Szegedy et al. 2017): Inception branches whose
concatenation, projected by a 1x1 convolution and scaled, is added to the block's
input; layers created in Keras's order (many are auto-named)."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.applications import building
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.layer import Layer
from loopax.src.layers.merging.merging import Concatenate
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import AveragePooling2D, MaxPooling2D


class CustomScaleLayer(Layer):
    """`inputs[0] + scale * inputs[1]`: the scaled residual sum (Keras's class of
    the same name, so that architectures and saved configs match)."""

    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs):
        return inputs[0] + inputs[1] * self.scale

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


def conv2d_bn(x, filters, kernel_size, strides=1, padding="same", activation="relu",
              use_bias=False, name=None):
    """Conv2D, BatchNormalization (no scale; only without a bias), activation."""
    x = Conv2D(filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias,
               name=name)(x)
    if not use_bias:
        x = BatchNormalization(axis=3, scale=False,
                               name=None if name is None else f"{name}_bn")(x)
    if activation is not None:
        x = Activation(activation, name=None if name is None else f"{name}_ac")(x)
    return x


def chain(x, convs):
    for filters, kernel_size in convs:
        x = conv2d_bn(x, filters, kernel_size)
    return x


# residual branches per block type: each a chain of (filters, kernel size)
_BRANCHES = {
    "block35": ([(32, 1)], [(32, 1), (32, 3)], [(32, 1), (48, 3), (64, 3)]),
    "block17": ([(192, 1)], [(128, 1), (160, (1, 7)), (192, (7, 1))]),
    "block8": ([(192, 1)], [(192, 1), (224, (1, 3)), (256, (3, 1))]),
}


def inception_resnet_block(x, scale, block_type, block_idx, activation="relu"):
    """`activation(x + scale * conv1x1(concat(branches(x))))`."""
    name = f"{block_type}_{block_idx}"
    mixed = Concatenate(axis=3, name=f"{name}_mixed")(
        [chain(x, convs) for convs in _BRANCHES[block_type]])
    up = conv2d_bn(mixed, x.shape[3], 1, activation=None, use_bias=True, name=f"{name}_conv")
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = Activation(activation, name=f"{name}_ac")(x)
    return x


def _reduction(x, branches, name):
    """Strided branches (the last conv of each strides 2, 'valid') and a max pool."""
    outputs = []
    for convs in branches:
        y = chain(x, convs[:-1])
        filters, kernel_size = convs[-1]
        outputs.append(conv2d_bn(y, filters, kernel_size, strides=2, padding="valid"))
    outputs.append(MaxPooling2D(3, strides=2, padding="valid")(x))
    return Concatenate(axis=3, name=name)(outputs)


@export("loopax.applications.InceptionResNetV2")
def InceptionResNetV2(include_top=True, weights="imagenet", input_tensor=None,
                      input_shape=None, pooling=None, classes=1000,
                      classifier_activation="softmax", name="inception_resnet_v2"):
    inputs, _, weights = building.prepare("InceptionResNetV2", weights, include_top, classes,
                                          pooling, input_tensor, input_shape, 299, 75)
    x = conv2d_bn(inputs, 32, 3, strides=2, padding="valid")
    x = conv2d_bn(x, 32, 3, padding="valid")
    x = conv2d_bn(x, 64, 3)
    x = MaxPooling2D(3, strides=2)(x)
    x = conv2d_bn(x, 80, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, padding="valid")
    x = MaxPooling2D(3, strides=2)(x)
    branches = [chain(x, convs) for convs in ([(96, 1)], [(48, 1), (64, 5)],
                                               [(64, 1), (96, 3), (96, 3)])]
    pool = conv2d_bn(AveragePooling2D(3, strides=1, padding="same")(x), 64, 1)
    x = Concatenate(axis=3, name="mixed_5b")([*branches, pool])
    for block_idx in range(1, 11):
        x = inception_resnet_block(x, 0.17, "block35", block_idx)
    x = _reduction(x, ([(384, 3)], [(256, 1), (256, 3), (384, 3)]), "mixed_6a")
    for block_idx in range(1, 21):
        x = inception_resnet_block(x, 0.1, "block17", block_idx)
    x = _reduction(x, ([(256, 1), (384, 3)], [(256, 1), (288, 3)],
                       [(256, 1), (288, 3), (320, 3)]), "mixed_7a")
    for block_idx in range(1, 10):
        x = inception_resnet_block(x, 0.2, "block8", block_idx)
    x = inception_resnet_block(x, 1.0, "block8", 10, activation=None)
    x = conv2d_bn(x, 1536, 1, name="conv_7b")
    x = building.classifier_head(x, include_top, pooling, classes, classifier_activation,
                                 ("avg_pool", None) if include_top else (None, None))
    return building.finish(inputs, x, name, weights)


InceptionResNetV2.__doc__ = (
    "InceptionResNetV2 on `(batch, height, width, 3)` images preprocessed with "
    "`loopax.applications.inception_resnet_v2.preprocess_input` (scaled to [-1, 1]); "
    "default size 299, sides of at least 75." + building.ARGS_DOC)
