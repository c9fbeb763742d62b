"""MobileNetV2 (Sandler et al. 2018): inverted residual blocks with linear
bottlenecks, layer names as Keras's."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.applications import building, imagenet_utils
from loopax.src.layers.activations.activation_layers import ReLU
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.convolutional.depthwise import DepthwiseConv2D
from loopax.src.layers.merging.merging import Add
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.reshaping.reshaping import ZeroPadding2D

# (filters, stride, expansion) of blocks 0..16
_BLOCKS = ((16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6),
           (64, 2, 6), (64, 1, 6), (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6),
           (96, 1, 6), (160, 2, 6), (160, 1, 6), (160, 1, 6), (320, 1, 6))


def make_divisible(value, divisor=8):
    """`value` rounded to the nearest multiple of `divisor`, never below
    `divisor` or 90% of `value`."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _bn(name):
    return BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=name)


def inverted_residual_block(inputs, expansion, stride, alpha, filters, block_id):
    in_channels = inputs.shape[-1]
    out_channels = make_divisible(int(filters * alpha))
    x = inputs
    prefix = f"block_{block_id}_" if block_id else "expanded_conv_"
    if block_id:
        x = Conv2D(expansion * in_channels, 1, padding="same", use_bias=False,
                   name=f"{prefix}expand")(x)
        x = _bn(f"{prefix}expand_BN")(x)
        x = ReLU(6.0, name=f"{prefix}expand_relu")(x)
    if stride == 2:
        x = ZeroPadding2D(imagenet_utils.correct_pad(tuple(x.shape[1:3]), 3),
                          name=f"{prefix}pad")(x)
    x = DepthwiseConv2D(3, strides=stride, use_bias=False,
                        padding="same" if stride == 1 else "valid",
                        name=f"{prefix}depthwise")(x)
    x = _bn(f"{prefix}depthwise_BN")(x)
    x = ReLU(6.0, name=f"{prefix}depthwise_relu")(x)
    x = Conv2D(out_channels, 1, padding="same", use_bias=False, name=f"{prefix}project")(x)
    x = _bn(f"{prefix}project_BN")(x)
    if in_channels == out_channels and stride == 1:
        return Add(name=f"{prefix}add")([inputs, x])
    return x


@export("loopax.applications.MobileNetV2")
def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights="imagenet",
                input_tensor=None, pooling=None, classes=1000,
                classifier_activation="softmax", name=None):
    """MobileNetV2 with width multiplier `alpha`, on images preprocessed with
    `loopax.applications.mobilenet_v2.preprocess_input` (scaled to [-1, 1]).

    Args:
        alpha: The width multiplier of every layer's channels (default 1.0);
            pretrained weights exist for 0.35, 0.5, 0.75, 1.0, 1.3 and 1.4.
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
        name: The model's name; None gives `"mobilenetv2_{alpha}_{rows}"`.

    Returns:
        A functional `Model`: `(batch, height, width, 3)` float images ->
        `(batch, classes)` with the top, else the features.

    Raises:
        OSError: the ImageNet file could not be downloaded (pass a local path).
        ValueError: a bad argument: a missing weights file, an unknown
            `pooling`, non-positive `classes`, or an `input_shape` that does not fit, or an `alpha`
            without published weights.
    """
    imagenet_utils.check_arguments(weights, include_top, classes, pooling, "MobileNetV2")
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 224, 32, include_top,
                                                    weights, "MobileNetV2")
    if weights is not None and alpha not in (0.35, 0.50, 0.75, 1.0, 1.3, 1.4):
        raise ValueError(f"MobileNetV2: Keras publishes weights for alpha in 0.35, 0.5, "
                         f"0.75, 1.0, 1.3, 1.4; got alpha={alpha}.")
    weights = imagenet_utils.resolve_weights(
        weights, "MobileNetV2", include_top, alpha=float(alpha),
        rows=input_shape[0] if input_shape[0] is not None else 224)
    inputs = building.image_input(input_tensor, input_shape)
    x = Conv2D(make_divisible(32 * alpha), 3, strides=2, padding="same", use_bias=False,
               name="Conv1")(inputs)
    x = _bn("bn_Conv1")(x)
    x = ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = inverted_residual_block(x, expansion, stride, alpha, filters, block_id)
    last = make_divisible(1280 * alpha) if alpha > 1.0 else 1280
    x = Conv2D(last, 1, use_bias=False, name="Conv_1")(x)
    x = _bn("Conv_1_bn")(x)
    x = ReLU(6.0, name="out_relu")(x)
    x = building.classifier_head(x, include_top, pooling, classes, classifier_activation,
                                 (None, None))
    rows = input_shape[0] if input_shape[0] is not None else 224
    return building.finish(inputs, x, name or f"mobilenetv2_{alpha:0.2f}_{rows}", weights)


def preprocess_input(x, data_format=None):
    """Scales RGB images from [0, 255] to [-1, 1], as MobileNetV2 expects.

    `imagenet_utils.preprocess_input` in "tf" mode.

    Args:
        x: RGB images in [0, 255], a batch or one image (NumPy or JAX, any float or
            int dtype; ints are cast to `floatx()`).
        data_format: `"channels_last"` or `"channels_first"`; None is
            `loopax.config.image_data_format()`.

    Returns:
        The preprocessed images, same shape, a float array of the same kind (NumPy or
        JAX).
    """
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


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
