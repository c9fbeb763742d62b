"""EfficientNetV2 B0-B3, S, M, L (Tan & Le 2021): fused-MBConv blocks early, MBConv
blocks with squeeze-and-excitation later, one builder; input rescaling is part of
the model (`include_preprocessing`), as in Keras."""

from __future__ import annotations

import math

from loopax.src.api_export import export
from loopax.src.applications import building, efficientnet
from loopax.src.applications.efficientnet import CONV_INIT
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.convolutional.depthwise import DepthwiseConv2D
from loopax.src.layers.merging.merging import add, multiply
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import GlobalAveragePooling2D
from loopax.src.layers.preprocessing.preprocessing import Normalization, Rescaling
from loopax.src.layers.regularization.dropout import Dropout
from loopax.src.layers.reshaping.reshape import Reshape

# (kernel, repeats, filters in, filters out, expansion, se ratio, stride, fused) per stage
_B = ((3, 1, 32, 16, 1, 0, 1, True), (3, 2, 16, 32, 4, 0, 2, True),
      (3, 2, 32, 48, 4, 0, 2, True), (3, 3, 48, 96, 4, 0.25, 2, False),
      (3, 5, 96, 112, 6, 0.25, 1, False), (3, 8, 112, 192, 6, 0.25, 2, False))
STAGES = {
    "B": _B,
    "S": ((3, 2, 24, 24, 1, 0, 1, True), (3, 4, 24, 48, 4, 0, 2, True),
          (3, 4, 48, 64, 4, 0, 2, True), (3, 6, 64, 128, 4, 0.25, 2, False),
          (3, 9, 128, 160, 6, 0.25, 1, False), (3, 15, 160, 256, 6, 0.25, 2, False)),
    "M": ((3, 3, 24, 24, 1, 0, 1, True), (3, 5, 24, 48, 4, 0, 2, True),
          (3, 5, 48, 80, 4, 0, 2, True), (3, 7, 80, 160, 4, 0.25, 2, False),
          (3, 14, 160, 176, 6, 0.25, 1, False), (3, 18, 176, 304, 6, 0.25, 2, False),
          (3, 5, 304, 512, 6, 0.25, 1, False)),
    "L": ((3, 4, 32, 32, 1, 0, 1, True), (3, 7, 32, 64, 4, 0, 2, True),
          (3, 7, 64, 96, 4, 0, 2, True), (3, 10, 96, 192, 4, 0.25, 2, False),
          (3, 19, 192, 224, 6, 0.25, 1, False), (3, 25, 224, 384, 6, 0.25, 2, False),
          (3, 7, 384, 640, 6, 0.25, 1, False)),
}
# size: (stages, width coefficient, depth coefficient, default size)
SCALING = {"B0": ("B", 1.0, 1.0, 224), "B1": ("B", 1.0, 1.1, 240), "B2": ("B", 1.1, 1.2, 260),
           "B3": ("B", 1.2, 1.4, 300), "S": ("S", 1.0, 1.0, 384), "M": ("M", 1.0, 1.0, 480),
           "L": ("L", 1.0, 1.0, 480)}
_BN_MOMENTUM = 0.9


def round_filters(filters, width_coefficient, divisor=8):
    """`filters * width_coefficient` to the nearest multiple of 8 (at least 8)."""
    return int(max(divisor, int(filters * width_coefficient + divisor / 2) // divisor * divisor))


def _bn(name):
    return BatchNormalization(axis=3, momentum=_BN_MOMENTUM, name=name)


def _squeeze_excite(x, filters, filters_in, se_ratio, name):
    se = GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
    se = Reshape((1, 1, filters), name=f"{name}se_reshape")(se)
    se = Conv2D(max(1, int(filters_in * se_ratio)), 1, padding="same", activation="swish",
                kernel_initializer=CONV_INIT, name=f"{name}se_reduce")(se)
    se = Conv2D(filters, 1, padding="same", activation="sigmoid", kernel_initializer=CONV_INIT,
                name=f"{name}se_expand")(se)
    return multiply([x, se], name=f"{name}se_excite")


def mbconv_block(inputs, filters_in, filters_out, expand_ratio, kernel_size, strides, se_ratio,
                 fused, drop_rate, name):
    """Fused: one `kernel_size` expansion convolution (strided); otherwise 1x1
    expansion + depthwise convolution. Then squeeze-excite, 1x1 projection, and the
    residual (with Keras's per-sample Dropout at `drop_rate`)."""
    filters = filters_in * expand_ratio
    x = inputs
    if expand_ratio != 1:
        x = Conv2D(filters, kernel_size if fused else 1, strides=strides if fused else 1,
                   padding="same", use_bias=False, kernel_initializer=CONV_INIT,
                   name=f"{name}expand_conv")(x)
        x = _bn(f"{name}expand_bn")(x)
        x = Activation("swish", name=f"{name}expand_activation")(x)
    if not fused:
        x = DepthwiseConv2D(kernel_size, strides=strides, padding="same", use_bias=False,
                            depthwise_initializer=CONV_INIT, name=f"{name}dwconv2")(x)
        x = _bn(f"{name}bn")(x)
        x = Activation("swish", name=f"{name}activation")(x)
    if 0 < se_ratio <= 1:
        x = _squeeze_excite(x, filters, filters_in, se_ratio, name)
    projects_alone = fused and expand_ratio == 1
    x = Conv2D(filters_out, kernel_size if projects_alone else 1,
               strides=strides if projects_alone else 1, padding="same", use_bias=False,
               kernel_initializer=CONV_INIT, name=f"{name}project_conv")(x)
    x = _bn(f"{name}project_bn")(x)
    if projects_alone:
        x = Activation("swish", name=f"{name}project_activation")(x)
    if strides == 1 and filters_in == filters_out:
        if drop_rate:
            x = Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = add([x, inputs], name=f"{name}add")
    return x


def build_efficientnet_v2(stages, width_coefficient, depth_coefficient, default_size,
                          normalize_imagenet, include_top, weights, input_tensor, input_shape,
                          pooling, classes, classifier_activation, name, owner,
                          include_preprocessing=True, dropout_rate=0.2,
                          drop_connect_rate=0.2):
    """An EfficientNetV2 of `stages` (Keras's `efficientnet_v2.EfficientNetV2`);
    `normalize_imagenet`: the B models' [0, 1] + ImageNet mean/std input
    normalization, else (S/M/L) `x / 128 - 1`."""
    inputs, input_shape, weights = building.prepare(owner, weights, include_top, classes,
                                                    pooling, input_tensor, input_shape,
                                                    default_size)
    x = inputs
    if include_preprocessing:
        if normalize_imagenet and input_shape[-1] == 3:
            x = Rescaling(scale=1.0 / 255)(x)
            x = Normalization(mean=[0.485, 0.456, 0.406],
                              variance=[0.229**2, 0.224**2, 0.225**2], axis=3)(x)
        else:
            x = Rescaling(scale=1.0 / 128.0, offset=-1)(x)
    x = Conv2D(round_filters(stages[0][2], width_coefficient), 3, strides=2, padding="same",
               use_bias=False, kernel_initializer=CONV_INIT, name="stem_conv")(x)
    x = _bn("stem_bn")(x)
    x = Activation("swish", name="stem_activation")(x)
    total = float(sum(stage[1] for stage in stages))
    done = 0
    for i, (kernel, repeats, f_in, f_out, expand, se_ratio, stride, fused) in enumerate(stages):
        f_in = round_filters(f_in, width_coefficient)
        f_out = round_filters(f_out, width_coefficient)
        for j in range(int(math.ceil(depth_coefficient * repeats))):
            x = mbconv_block(x, f_in if j == 0 else f_out, f_out, expand, kernel,
                             stride if j == 0 else 1, se_ratio, fused,
                             drop_connect_rate * done / total, f"block{i + 1}{chr(j + 97)}_")
            done += 1
    x = efficientnet.top(x, round_filters(1280, width_coefficient), _bn("top_bn"), include_top,
                         pooling, dropout_rate, classes, classifier_activation)
    return building.finish(inputs, x, name, weights)


def _variant(size):
    stages, width_coefficient, depth_coefficient, default_size = SCALING[size]
    owner = f"EfficientNetV2{size}"

    def constructor(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                    pooling=None, classes=1000, classifier_activation="softmax",
                    include_preprocessing=True, name=f"efficientnetv2-{size.lower()}"):
        return build_efficientnet_v2(
            STAGES[stages], width_coefficient, depth_coefficient, default_size,
            stages == "B", include_top, weights, input_tensor, input_shape, pooling, classes,
            classifier_activation, name, owner, include_preprocessing=include_preprocessing)

    constructor.__name__ = constructor.__qualname__ = owner
    constructor.__doc__ = (
        f"{owner} on raw `[0, 255]` RGB images (with `include_preprocessing`, the default, "
        f"the model rescales them itself; `preprocess_input` is the identity); default "
        f"size {default_size}." + building.ARGS_DOC)
    return constructor


EfficientNetV2B0 = export("loopax.applications.EfficientNetV2B0")(_variant("B0"))
EfficientNetV2B1 = export("loopax.applications.EfficientNetV2B1")(_variant("B1"))
EfficientNetV2B2 = export("loopax.applications.EfficientNetV2B2")(_variant("B2"))
EfficientNetV2B3 = export("loopax.applications.EfficientNetV2B3")(_variant("B3"))
EfficientNetV2S = export("loopax.applications.EfficientNetV2S")(_variant("S"))
EfficientNetV2M = export("loopax.applications.EfficientNetV2M")(_variant("M"))
EfficientNetV2L = export("loopax.applications.EfficientNetV2L")(_variant("L"))
