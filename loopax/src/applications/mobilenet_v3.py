"""MobileNetV3 Small and Large (Howard et al. 2019): inverted residual blocks
with squeeze-and-excitation and hard-swish, one builder; the [-1, 1] rescaling
is part of the model (`include_preprocessing`), as in Keras."""

from __future__ import annotations

import warnings

from loopax.src.api_export import export
from loopax.src.applications import building, imagenet_utils
from loopax.src.applications.mobilenet_v2 import make_divisible
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.activations.activation_layers import ReLU
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.convolutional.depthwise import DepthwiseConv2D
from loopax.src.layers.merging.merging import Add, Multiply
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import GlobalAveragePooling2D, GlobalMaxPooling2D
from loopax.src.layers.preprocessing.preprocessing import Rescaling
from loopax.src.layers.regularization.dropout import Dropout
from loopax.src.layers.reshaping.flatten import Flatten
from loopax.src.layers.reshaping.reshaping import ZeroPadding2D

# (expansion, filters, kernel ("k": 5, or 3 when minimalistic), stride, squeeze-excite,
#  activation ("relu", or "hs": hard-swish unless minimalistic)) per block
SMALL = ((1, 16, 3, 2, True, "relu"), (72 / 16, 24, 3, 2, False, "relu"),
         (88 / 24, 24, 3, 1, False, "relu"), (4, 40, "k", 2, True, "hs"),
         (6, 40, "k", 1, True, "hs"), (6, 40, "k", 1, True, "hs"), (3, 48, "k", 1, True, "hs"),
         (3, 48, "k", 1, True, "hs"), (6, 96, "k", 2, True, "hs"), (6, 96, "k", 1, True, "hs"),
         (6, 96, "k", 1, True, "hs"))
LARGE = ((1, 16, 3, 1, False, "relu"), (4, 24, 3, 2, False, "relu"),
         (3, 24, 3, 1, False, "relu"), (3, 40, "k", 2, True, "relu"),
         (3, 40, "k", 1, True, "relu"), (3, 40, "k", 1, True, "relu"),
         (6, 80, 3, 2, False, "hs"), (2.5, 80, 3, 1, False, "hs"), (2.3, 80, 3, 1, False, "hs"),
         (2.3, 80, 3, 1, False, "hs"), (6, 112, 3, 1, True, "hs"), (6, 112, 3, 1, True, "hs"),
         (6, 160, "k", 2, True, "hs"), (6, 160, "k", 1, True, "hs"),
         (6, 160, "k", 1, True, "hs"))


def _activate(x, kind):
    return ReLU()(x) if kind == "relu" else Activation("hard_swish")(x)


def _bn(name):
    return BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=name)


def se_block(inputs, filters, se_ratio, prefix):
    """Squeeze-and-excitation with a hard sigmoid gate."""
    x = GlobalAveragePooling2D(keepdims=True, name=f"{prefix}squeeze_excite_avg_pool")(inputs)
    x = Conv2D(make_divisible(filters * se_ratio), 1, padding="same",
               name=f"{prefix}squeeze_excite_conv")(x)
    x = ReLU(name=f"{prefix}squeeze_excite_relu")(x)
    x = Conv2D(filters, 1, padding="same", name=f"{prefix}squeeze_excite_conv_1")(x)
    x = ReLU(6.0)(x + 3.0) * (1.0 / 6.0)
    return Multiply(name=f"{prefix}squeeze_excite_mul")([inputs, x])


def inverted_res_block(x, expansion, filters, kernel_size, stride, se_ratio, activation,
                       block_id):
    shortcut = x
    in_filters = x.shape[-1]
    expanded = make_divisible(in_filters * expansion)
    prefix = f"expanded_conv_{block_id}_" if block_id else "expanded_conv_"
    if block_id:
        x = Conv2D(expanded, 1, padding="same", use_bias=False, name=f"{prefix}expand")(x)
        x = _bn(f"{prefix}expand_bn")(x)
        x = _activate(x, activation)
    if stride == 2:
        x = ZeroPadding2D(imagenet_utils.correct_pad(tuple(x.shape[1:3]), kernel_size),
                          name=f"{prefix}depthwise_pad")(x)
    x = DepthwiseConv2D(kernel_size, strides=stride, padding="same" if stride == 1 else "valid",
                        use_bias=False, name=f"{prefix}depthwise")(x)
    x = _bn(f"{prefix}depthwise_bn")(x)
    x = _activate(x, activation)
    if se_ratio:
        x = se_block(x, expanded, se_ratio, prefix)
    x = Conv2D(filters, 1, padding="same", use_bias=False, name=f"{prefix}project")(x)
    x = _bn(f"{prefix}project_bn")(x)
    if stride == 1 and in_filters == filters:
        x = Add(name=f"{prefix}add")([shortcut, x])
    return x


def _input_shape(input_shape, input_tensor, owner):
    """Keras's rule for MobileNetV3: the given shape, the input tensor's, or
    `(None, None, 3)` (also with the top); sides of at least 32."""
    if input_shape is None:
        input_shape = (None, None, 3) if input_tensor is None else tuple(input_tensor.shape[1:])
    rows, cols = input_shape[0], input_shape[1]
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError(f"{owner}: input height and width must be at least 32; got "
                         f"input_shape={input_shape}.")
    return tuple(input_shape)


def build_mobilenet_v3(blocks, last_point_ch, model_type, input_shape, alpha, minimalistic,
                       include_top, weights, input_tensor, classes, pooling, dropout_rate,
                       classifier_activation, include_preprocessing, name, owner):
    """A MobileNetV3 of `blocks` (SMALL or LARGE) at width `alpha` (Keras's
    `mobilenet_v3.MobileNetV3`)."""
    imagenet_utils.check_arguments(weights, include_top, classes, pooling, owner)
    input_shape = _input_shape(input_shape, input_tensor, owner)
    published = f"{model_type}{'_minimalistic' if minimalistic else ''}_224_{alpha}_float"
    if weights == "imagenet":
        if (alpha not in (0.75, 1.0)) if not minimalistic else alpha != 1.0:
            raise ValueError(f"{owner}: Keras publishes weights for alpha 0.75 and 1.0 "
                             f"(1.0 when minimalistic); got alpha={alpha}.")
        if input_shape[0] != input_shape[1] or input_shape[0] != 224:
            warnings.warn(f"{owner}: `input_shape` {input_shape} is undefined, not square "
                          "or not 224: the weights for 224x224 are loaded (as Keras does).",
                          stacklevel=3)
    weights = imagenet_utils.resolve_weights(weights, f"MobileNetV3/{published}", include_top)
    inputs = building.image_input(input_tensor, input_shape)
    kernel, strong, se_ratio = (3, "relu", None) if minimalistic else (5, "hs", 0.25)
    x = inputs
    if include_preprocessing:
        x = Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = Conv2D(16, 3, strides=2, padding="same", use_bias=False, name="conv")(x)
    x = _bn("conv_bn")(x)
    x = _activate(x, strong)
    for block_id, (expansion, filters, size, stride, se, act) in enumerate(blocks):
        x = inverted_res_block(x, expansion, make_divisible(filters * alpha),
                               kernel if size == "k" else size, stride,
                               se_ratio if se else None, strong if act == "hs" else "relu",
                               block_id)
    last_conv_ch = make_divisible(x.shape[-1] * 6)
    if alpha > 1.0:
        last_point_ch = make_divisible(last_point_ch * alpha)
    x = Conv2D(last_conv_ch, 1, padding="same", use_bias=False, name="conv_1")(x)
    x = _bn("conv_1_bn")(x)
    x = _activate(x, strong)
    if include_top:
        x = GlobalAveragePooling2D(keepdims=True)(x)
        x = Conv2D(last_point_ch, 1, padding="same", use_bias=True, name="conv_2")(x)
        x = _activate(x, strong)
        if dropout_rate > 0:
            x = Dropout(dropout_rate)(x)
        x = Conv2D(classes, 1, padding="same", name="logits")(x)
        x = Flatten()(x)
        x = Activation(classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = GlobalAveragePooling2D(name="avg_pool")(x)
    elif pooling == "max":
        x = GlobalMaxPooling2D(name="max_pool")(x)
    return building.finish(inputs, x, name, weights)


_DOC = """{owner} on raw `[0, 255]` RGB images (with `include_preprocessing`, the
    default, the model rescales them to [-1, 1] itself; `preprocess_input` is the
    identity).

    Args:
        input_shape: `(height, width, 3)`, or None: `(None, None, 3)` (also with
            the top, as in Keras); sides of at least 32.
        alpha: The width multiplier (default 1.0; weights exist for 0.75 and 1.0,
            1.0 when minimalistic).
        minimalistic: 3x3 kernels, ReLU and no squeeze-and-excitation (default False).
        include_top, weights, input_tensor, classes, pooling, classifier_activation:
            as `loopax.applications.ResNet50`.
        dropout_rate: Dropout before the top's last convolution (default 0.2).
        include_preprocessing: Whether the model rescales its inputs (default True).
        name: The model's name (default "{owner}").

    Returns:
        A functional `Model`.
    """


def _variant(owner, blocks, last_point_ch, model_type):
    def constructor(input_shape=None, alpha=1.0, minimalistic=False, include_top=True,
                    weights="imagenet", input_tensor=None, classes=1000, pooling=None,
                    dropout_rate=0.2, classifier_activation="softmax",
                    include_preprocessing=True, name=owner):
        return build_mobilenet_v3(blocks, last_point_ch, model_type, input_shape, alpha,
                                  minimalistic, include_top, weights, input_tensor, classes,
                                  pooling, dropout_rate, classifier_activation,
                                  include_preprocessing, name, owner)

    constructor.__name__ = constructor.__qualname__ = owner
    constructor.__doc__ = _DOC.format(owner=owner)
    return constructor


MobileNetV3Small = _variant("MobileNetV3Small", SMALL, 1024, "small")
export("loopax.applications.MobileNetV3Small")(MobileNetV3Small)
MobileNetV3Large = _variant("MobileNetV3Large", LARGE, 1280, "large")
export("loopax.applications.MobileNetV3Large")(MobileNetV3Large)
