"""EfficientNetB0-B7 (Tan & Le 2019): MBConv blocks with squeeze-and-excitation,
one builder scaled in width and depth; the input rescaling/normalization is part
of the model, as in Keras."""

from __future__ import annotations

import math

from loopax.src.api_export import export
from loopax.src.applications import building, imagenet_utils
from loopax.src.applications.mobilenet_v2 import make_divisible
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.convolutional.depthwise import DepthwiseConv2D
from loopax.src.layers.core.dense import Dense
from loopax.src.layers.merging.merging import add, multiply
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import GlobalAveragePooling2D, GlobalMaxPooling2D
from loopax.src.layers.preprocessing.preprocessing import Normalization, Rescaling
from loopax.src.layers.regularization.dropout import Dropout
from loopax.src.layers.reshaping.reshape import Reshape
from loopax.src.layers.reshaping.reshaping import ZeroPadding2D

IMAGENET_STDDEV_RGB = (0.229, 0.224, 0.225)
CONV_INIT = {"class_name": "VarianceScaling",
             "config": {"scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"}}
DENSE_INIT = {"class_name": "VarianceScaling",
              "config": {"scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"}}
# (kernel, repeats, filters in, filters out, expansion, stride) per stage; SE ratio 0.25
_STAGES = ((3, 1, 32, 16, 1, 1), (3, 2, 16, 24, 6, 2), (5, 2, 24, 40, 6, 2),
           (3, 3, 40, 80, 6, 2), (5, 3, 80, 112, 6, 1), (5, 4, 112, 192, 6, 2),
           (3, 1, 192, 320, 6, 1))


def mbconv_block(inputs, drop_rate, name, filters_in, filters_out, kernel_size, strides,
                 expand_ratio, se_ratio=0.25, activation="swish"):
    filters = filters_in * expand_ratio
    x = inputs
    if expand_ratio != 1:
        x = Conv2D(filters, 1, padding="same", use_bias=False, kernel_initializer=CONV_INIT,
                   name=f"{name}expand_conv")(x)
        x = BatchNormalization(axis=3, name=f"{name}expand_bn")(x)
        x = Activation(activation, name=f"{name}expand_activation")(x)
    if strides == 2:
        x = ZeroPadding2D(imagenet_utils.correct_pad(tuple(x.shape[1:3]), kernel_size),
                          name=f"{name}dwconv_pad")(x)
    x = DepthwiseConv2D(kernel_size, strides=strides,
                        padding="valid" if strides == 2 else "same", use_bias=False,
                        depthwise_initializer=CONV_INIT, name=f"{name}dwconv")(x)
    x = BatchNormalization(axis=3, name=f"{name}bn")(x)
    x = Activation(activation, name=f"{name}activation")(x)
    squeezed = max(1, int(filters_in * se_ratio))
    se = GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
    se = Reshape((1, 1, filters), name=f"{name}se_reshape")(se)
    se = Conv2D(squeezed, 1, padding="same", activation=activation,
                kernel_initializer=CONV_INIT, name=f"{name}se_reduce")(se)
    se = Conv2D(filters, 1, padding="same", activation="sigmoid",
                kernel_initializer=CONV_INIT, name=f"{name}se_expand")(se)
    x = multiply([x, se], name=f"{name}se_excite")
    x = Conv2D(filters_out, 1, padding="same", use_bias=False, kernel_initializer=CONV_INIT,
               name=f"{name}project_conv")(x)
    x = BatchNormalization(axis=3, name=f"{name}project_bn")(x)
    if strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = add([x, inputs], name=f"{name}add")
    return x


# (width coefficient, depth coefficient, default size, dropout before the top)
SCALING = {"B0": (1.0, 1.0, 224, 0.2), "B1": (1.0, 1.1, 240, 0.2), "B2": (1.1, 1.2, 260, 0.3),
           "B3": (1.2, 1.4, 300, 0.3), "B4": (1.4, 1.8, 380, 0.4), "B5": (1.6, 2.2, 456, 0.4),
           "B6": (1.8, 2.6, 528, 0.5), "B7": (2.0, 3.1, 600, 0.5)}


def build_efficientnet(width_coefficient, depth_coefficient, default_size, dropout_rate,
                       include_top, weights, input_tensor, input_shape, pooling, classes,
                       classifier_activation, name, owner, drop_connect_rate=0.2,
                       stages=_STAGES):
    """An EfficientNet (Keras's `efficientnet.EfficientNet`): B0's `stages` with
    channels scaled by `width_coefficient` (rounded to multiples of 8) and
    repeats by `depth_coefficient` (rounded up)."""
    imagenet = weights == "imagenet"
    inputs, _, weights = building.prepare(owner, weights, include_top, classes, pooling,
                                          input_tensor, input_shape, default_size)

    def width(filters):
        return make_divisible(filters * width_coefficient)

    def repeats(count):
        return int(math.ceil(depth_coefficient * count))

    x = Rescaling(1.0 / 255.0)(inputs)
    x = Normalization(axis=3)(x)
    if imagenet:   # as Keras for its ImageNet weights only: divide by the std
        x = Rescaling([1.0 / math.sqrt(s) for s in IMAGENET_STDDEV_RGB])(x)
    x = ZeroPadding2D(imagenet_utils.correct_pad(tuple(x.shape[1:3]), 3),
                      name="stem_conv_pad")(x)
    x = Conv2D(width(32), 3, strides=2, padding="valid", use_bias=False,
               kernel_initializer=CONV_INIT, name="stem_conv")(x)
    x = BatchNormalization(axis=3, name="stem_bn")(x)
    x = Activation("swish", name="stem_activation")(x)
    total = float(sum(repeats(stage[1]) for stage in stages))
    done = 0
    for i, (kernel, count, f_in, f_out, expand, stride) in enumerate(stages):
        f_in, f_out = width(f_in), width(f_out)
        for j in range(repeats(count)):
            x = mbconv_block(x, drop_connect_rate * done / total, f"block{i + 1}{chr(j + 97)}_",
                             f_in if j == 0 else f_out, f_out, kernel,
                             stride if j == 0 else 1, expand)
            done += 1
    x = top(x, width(1280), BatchNormalization(axis=3, name="top_bn"), include_top, pooling,
            dropout_rate, classes, classifier_activation)
    return building.finish(inputs, x, name, weights)


def top(x, filters, batch_norm, include_top, pooling, dropout_rate, classes,
        classifier_activation):
    """The top of EfficientNet V1 and V2: a 1x1 `top_conv` to `filters` channels,
    `batch_norm`, swish; then the classifier (average pooling, dropout, Dense)
    or the `pooling` of a model without it."""
    x = Conv2D(filters, 1, padding="same", use_bias=False, kernel_initializer=CONV_INIT,
               name="top_conv")(x)
    x = batch_norm(x)
    x = Activation("swish", name="top_activation")(x)
    if include_top:
        x = GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = Dropout(dropout_rate, name="top_dropout")(x)
        return Dense(classes, activation=classifier_activation, kernel_initializer=DENSE_INIT,
                     name="predictions")(x)
    if pooling == "avg":
        return GlobalAveragePooling2D(name="avg_pool")(x)
    if pooling == "max":
        return GlobalMaxPooling2D(name="max_pool")(x)
    return x


def _variant(size):
    width_coefficient, depth_coefficient, default_size, dropout_rate = SCALING[size]
    owner = f"EfficientNet{size}"

    def constructor(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                    pooling=None, classes=1000, classifier_activation="softmax",
                    name=owner.lower(), drop_connect_rate=0.2, dropout_rate=dropout_rate):
        return build_efficientnet(
            width_coefficient, depth_coefficient, default_size, dropout_rate, include_top,
            weights, input_tensor, input_shape, pooling, classes, classifier_activation,
            name, owner, drop_connect_rate)

    constructor.__name__ = constructor.__qualname__ = owner
    extra_args = (
        "        drop_connect_rate: The stochastic-depth rate; block i of n drops with\n"
        "            rate `drop_connect_rate · i / n` (default 0.2).\n"
        f"        dropout_rate: Dropout before the top's Dense layer (default {dropout_rate}).\n"
        "\n    Returns:")
    constructor.__doc__ = (
        f"{owner} on raw `[0, 255]` RGB images (the model rescales and normalizes them "
        f"itself; `preprocess_input` is the identity); default size {default_size}."
        + building.ARGS_DOC.replace("\n    Returns:", extra_args))
    return constructor


EfficientNetB0 = export("loopax.applications.EfficientNetB0")(_variant("B0"))
EfficientNetB1 = export("loopax.applications.EfficientNetB1")(_variant("B1"))
EfficientNetB2 = export("loopax.applications.EfficientNetB2")(_variant("B2"))
EfficientNetB3 = export("loopax.applications.EfficientNetB3")(_variant("B3"))
EfficientNetB4 = export("loopax.applications.EfficientNetB4")(_variant("B4"))
EfficientNetB5 = export("loopax.applications.EfficientNetB5")(_variant("B5"))
EfficientNetB6 = export("loopax.applications.EfficientNetB6")(_variant("B6"))
EfficientNetB7 = export("loopax.applications.EfficientNetB7")(_variant("B7"))


def preprocess_input(x, data_format=None):
    """The identity: EfficientNet models rescale their inputs themselves.

    Args:
        x: Images (any array).
        data_format: Ignored (Keras's signature).

    Returns:
        `x`, unchanged.
    """
    return x


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
