"""DenseNet121/169/201 (Huang et al. 2017): dense blocks whose layers each
concatenate 32 new channels to their input, with halving transitions between
them; one builder, layer names as Keras's."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.applications import building
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.merging.merging import Concatenate
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import AveragePooling2D, MaxPooling2D
from loopax.src.layers.reshaping.reshaping import ZeroPadding2D

_EPSILON = 1.001e-5
GROWTH_RATE = 32
# conv blocks in the four dense blocks, per depth
BLOCKS = {121: (6, 12, 24, 16), 169: (6, 12, 32, 32), 201: (6, 12, 48, 32)}


def _bn(name):
    return BatchNormalization(axis=3, epsilon=_EPSILON, name=name)


def conv_block(x, name):
    """BN-ReLU-1x1 (4 * growth) - BN-ReLU-3x3 (growth), concatenated to `x`."""
    y = _bn(f"{name}_0_bn")(x)
    y = Activation("relu", name=f"{name}_0_relu")(y)
    y = Conv2D(4 * GROWTH_RATE, 1, use_bias=False, name=f"{name}_1_conv")(y)
    y = _bn(f"{name}_1_bn")(y)
    y = Activation("relu", name=f"{name}_1_relu")(y)
    y = Conv2D(GROWTH_RATE, 3, padding="same", use_bias=False, name=f"{name}_2_conv")(y)
    return Concatenate(axis=3, name=f"{name}_concat")([x, y])


def transition_block(x, name):
    """BN-ReLU-1x1 to half the channels, then 2x2 average pooling."""
    x = _bn(f"{name}_bn")(x)
    x = Activation("relu", name=f"{name}_relu")(x)
    x = Conv2D(int(x.shape[3] * 0.5), 1, use_bias=False, name=f"{name}_conv")(x)
    return AveragePooling2D(2, strides=2, name=f"{name}_pool")(x)


def build_densenet(blocks, include_top, weights, input_tensor, input_shape, pooling, classes,
                   classifier_activation, name, owner):
    """A DenseNet with `blocks[i]` conv blocks in dense block i (Keras's
    `densenet.DenseNet`)."""
    inputs, _, weights = building.prepare(owner, weights, include_top, classes, pooling,
                                          input_tensor, input_shape)
    x = ZeroPadding2D(((3, 3), (3, 3)))(inputs)
    x = Conv2D(64, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = _bn("conv1_bn")(x)
    x = Activation("relu", name="conv1_relu")(x)
    x = ZeroPadding2D(((1, 1), (1, 1)))(x)
    x = MaxPooling2D(3, strides=2, name="pool1")(x)
    for index, count in enumerate(blocks):
        for i in range(count):
            x = conv_block(x, name=f"conv{index + 2}_block{i + 1}")
        if index < 3:
            x = transition_block(x, name=f"pool{index + 2}")
    x = _bn("bn")(x)
    x = Activation("relu", name="relu")(x)
    x = building.classifier_head(x, include_top, pooling, classes, classifier_activation,
                                 ("avg_pool", "max_pool"))
    return building.finish(inputs, x, name, weights)


_DOC = ("{owner} on `(batch, height, width, 3)` images preprocessed with "
        "`loopax.applications.densenet.preprocess_input` (\"torch\" mode; default size 224).")
DenseNet121 = building.named_variant(build_densenet, "DenseNet121", "densenet", _DOC,
                                     blocks=BLOCKS[121])
export("loopax.applications.DenseNet121")(DenseNet121)
DenseNet169 = building.named_variant(build_densenet, "DenseNet169", "densenet", _DOC,
                                     blocks=BLOCKS[169])
export("loopax.applications.DenseNet169")(DenseNet169)
DenseNet201 = building.named_variant(build_densenet, "DenseNet201", "densenet", _DOC,
                                     blocks=BLOCKS[201])
export("loopax.applications.DenseNet201")(DenseNet201)
