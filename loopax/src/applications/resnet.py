"""ResNet V1 (He et al. 2015, the stride in the first 1x1 convolution) and V2
(He et al. 2016, pre-activation) at depths 50/101/152, one builder for all six;
layer names as Keras's so its weight files load."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.applications import building, imagenet_utils
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.merging.merging import Add
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import MaxPooling2D
from loopax.src.layers.reshaping.reshaping import ZeroPadding2D

_EPSILON = 1.001e-5
# blocks per stage conv2..conv5 (filters 64, 128, 256, 512), per depth
DEPTHS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}
_FILTERS = (64, 128, 256, 512)


def _bn(name):
    return BatchNormalization(axis=3, epsilon=_EPSILON, name=name)


def bottleneck_block(x, filters, stride=1, project_shortcut=True, name=None):
    """V1: 1x1 (`filters`, `stride`) -> 3x3 -> 1x1 (`4 * filters`) plus the
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


def preact_bottleneck_block(x, filters, stride=1, project_shortcut=False, name=None):
    """V2: BN-ReLU first, then 1x1 -> 3x3 (`stride`) -> 1x1 (`4 * filters`); the
    shortcut is a 1x1 projection of the pre-activation, a strided 1x1 max pool,
    or the input."""
    preact = _bn(f"{name}_preact_bn")(x)
    preact = Activation("relu", name=f"{name}_preact_relu")(preact)
    if project_shortcut:
        shortcut = Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(preact)
    elif stride > 1:
        shortcut = MaxPooling2D(1, strides=stride)(x)
    else:
        shortcut = x
    x = Conv2D(filters, 1, use_bias=False, name=f"{name}_1_conv")(preact)
    x = _bn(f"{name}_1_bn")(x)
    x = Activation("relu", name=f"{name}_1_relu")(x)
    x = ZeroPadding2D(((1, 1), (1, 1)), name=f"{name}_2_pad")(x)
    x = Conv2D(filters, 3, strides=stride, use_bias=False, name=f"{name}_2_conv")(x)
    x = _bn(f"{name}_2_bn")(x)
    x = Activation("relu", name=f"{name}_2_relu")(x)
    x = Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    return Add(name=f"{name}_out")([shortcut, x])


def stage(x, filters, blocks, stride=2, name=None):
    """V1 stage: the first block projects (and strides), the others add the input."""
    x = bottleneck_block(x, filters, stride=stride, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = bottleneck_block(x, filters, project_shortcut=False, name=f"{name}_block{i}")
    return x


def preact_stage(x, filters, blocks, stride=2, name=None):
    """V2 stage: the first block projects, the last one strides."""
    x = preact_bottleneck_block(x, filters, project_shortcut=True, name=f"{name}_block1")
    for i in range(2, blocks):
        x = preact_bottleneck_block(x, filters, name=f"{name}_block{i}")
    return preact_bottleneck_block(x, filters, stride=stride, name=f"{name}_block{blocks}")


def build_resnet(blocks, preact, include_top, weights, input_tensor, input_shape, pooling,
                 classes, classifier_activation, name, owner):
    """A ResNet (V2 when `preact`) as Keras builds it: the 7x7 stem, four stages
    of `blocks[i]` bottleneck blocks, then the head."""
    inputs, _, weights = building.prepare(owner, weights, include_top, classes, pooling,
                                          input_tensor, input_shape)
    x = ZeroPadding2D(((3, 3), (3, 3)), name="conv1_pad")(inputs)
    x = Conv2D(64, 7, strides=2, name="conv1_conv")(x)
    if not preact:
        x = _bn("conv1_bn")(x)
        x = Activation("relu", name="conv1_relu")(x)
    x = ZeroPadding2D(((1, 1), (1, 1)), name="pool1_pad")(x)
    x = MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    for index, (filters, blocks) in enumerate(zip(_FILTERS, blocks)):
        stage_name = f"conv{index + 2}"
        if preact:   # V2 strides at the end of conv2..conv4
            x = preact_stage(x, filters, blocks, stride=1 if index == 3 else 2,
                             name=stage_name)
        else:        # V1 at the start of conv3..conv5
            x = stage(x, filters, blocks, stride=1 if index == 0 else 2, name=stage_name)
    if preact:
        x = _bn("post_bn")(x)
        x = Activation("relu", name="post_relu")(x)
    x = building.classifier_head(x, include_top, pooling, classes, classifier_activation,
                                 ("avg_pool", "max_pool"))
    return building.finish(inputs, x, name, weights)


_DOC = ("{owner} on `(batch, height, width, 3)` images preprocessed with "
        "`loopax.applications.{module}.preprocess_input` (default size 224).")


def _variant(owner, depth, preact):
    return building.named_variant(build_resnet, owner, "resnet_v2" if preact else "resnet",
                                  _DOC, blocks=DEPTHS[depth], preact=preact)


ResNet50 = export("loopax.applications.ResNet50")(_variant("ResNet50", 50, preact=False))
ResNet101 = export("loopax.applications.ResNet101")(_variant("ResNet101", 101, preact=False))
ResNet152 = export("loopax.applications.ResNet152")(_variant("ResNet152", 152, preact=False))
ResNet50V2 = export("loopax.applications.ResNet50V2")(_variant("ResNet50V2", 50, preact=True))
ResNet101V2 = export("loopax.applications.ResNet101V2")(_variant("ResNet101V2", 101, preact=True))
ResNet152V2 = export("loopax.applications.ResNet152V2")(_variant("ResNet152V2", 152, preact=True))


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
