"""MobileNet V1 (Howard et al. 2017): a strided 3x3 convolution, then 13
depthwise-separable blocks; width multiplier `alpha`, layer names as Keras's."""

from __future__ import annotations

import warnings

from loopax.src.api_export import export
from loopax.src.applications import building, imagenet_utils
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.activations.activation_layers import ReLU
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.convolutional.depthwise import DepthwiseConv2D
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import GlobalAveragePooling2D, GlobalMaxPooling2D
from loopax.src.layers.regularization.dropout import Dropout
from loopax.src.layers.reshaping.reshape import Reshape
from loopax.src.layers.reshaping.reshaping import ZeroPadding2D

# (pointwise filters, stride) of blocks 1..13
_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
           (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))
_PUBLISHED_ALPHAS = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}
_PUBLISHED_ROWS = (128, 160, 192, 224)


def depthwise_separable_block(x, filters, alpha, depth_multiplier, stride, block_id):
    """3x3 depthwise (`stride`) - BN - ReLU6 - 1x1 (`filters * alpha`) - BN - ReLU6."""
    if stride == 2:
        x = ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(x)
    x = DepthwiseConv2D(3, padding="same" if stride == 1 else "valid",
                        depth_multiplier=depth_multiplier, strides=stride, use_bias=False,
                        name=f"conv_dw_{block_id}")(x)
    x = BatchNormalization(axis=-1, name=f"conv_dw_{block_id}_bn")(x)
    x = ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = Conv2D(int(filters * alpha), 1, padding="same", use_bias=False,
               name=f"conv_pw_{block_id}")(x)
    x = BatchNormalization(axis=-1, name=f"conv_pw_{block_id}_bn")(x)
    return ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


def _published_rows(input_shape):
    rows = None if input_shape is None else input_shape[0]
    cols = None if input_shape is None else input_shape[1]
    return rows if rows == cols and rows in _PUBLISHED_ROWS else 224


@export("loopax.applications.MobileNet")
def MobileNet(input_shape=None, alpha=1.0, depth_multiplier=1, dropout=1e-3,
              include_top=True, weights="imagenet", input_tensor=None, pooling=None,
              classes=1000, classifier_activation="softmax", name=None):
    """MobileNet on images preprocessed with
    `loopax.applications.mobilenet.preprocess_input` (scaled to [-1, 1]).

    Args:
        input_shape: `(height, width, channels)`, or None: `(224, 224, 3)` with
            `include_top` (or the square size given, if Keras publishes weights for
            it: 128, 160, 192, 224), else `(None, None, 3)`.
        alpha: The width multiplier (default 1.0; weights exist for 0.25, 0.5,
            0.75, 1.0).
        depth_multiplier: The depthwise convolutions' multiplier (default 1; 1
            with pretrained weights).
        dropout: The dropout rate before the top (default 1e-3).
        include_top, weights, input_tensor, pooling, classes, classifier_activation:
            as `loopax.applications.ResNet50`.
        name: The model's name; None gives `"mobilenet_{alpha}_{rows}"`.

    Returns:
        A functional `Model`.

    Raises:
        OSError: the ImageNet file could not be downloaded (pass a local path).
        ValueError: a bad argument, or an `alpha`/`depth_multiplier` without
            published weights.
    """
    owner = "MobileNet"
    default_size = _published_rows(input_shape)
    shape = imagenet_utils.obtain_input_shape(input_shape, default_size, 32, include_top,
                                              weights, owner)
    rows = shape[0]
    if weights == "imagenet":
        if depth_multiplier != 1:
            raise ValueError(f"{owner}: ImageNet weights need depth_multiplier=1; got "
                             f"depth_multiplier={depth_multiplier}.")
        if alpha not in _PUBLISHED_ALPHAS:
            raise ValueError(f"{owner}: Keras publishes weights for alpha in 0.25, 0.5, "
                             f"0.75, 1.0; got alpha={alpha}.")
        if rows != shape[1] or rows not in _PUBLISHED_ROWS:
            rows = 224
            warnings.warn(f"{owner}: `input_shape` {input_shape} is undefined, not square "
                          f"or not in {_PUBLISHED_ROWS}: the weights for 224x224 are loaded "
                          "(as Keras does); pass a published size to get its weights.",
                          stacklevel=2)
    inputs, _, weights = building.prepare(
        owner, weights, include_top, classes, pooling, input_tensor, input_shape,
        default_size=default_size, alpha=_PUBLISHED_ALPHAS.get(alpha), rows=rows)
    x = Conv2D(int(32 * alpha), 3, padding="same", use_bias=False, strides=2,
               name="conv1")(inputs)
    x = BatchNormalization(axis=-1, name="conv1_bn")(x)
    x = ReLU(6.0, name="conv1_relu")(x)
    for block_id, (filters, stride) in enumerate(_BLOCKS, start=1):
        x = depthwise_separable_block(x, filters, alpha, depth_multiplier, stride, block_id)
    if include_top:
        x = GlobalAveragePooling2D(keepdims=True)(x)
        x = Dropout(dropout, name="dropout")(x)
        x = Conv2D(classes, 1, padding="same", name="conv_preds")(x)
        x = Reshape((classes,), name="reshape_2")(x)
        x = Activation(classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = GlobalMaxPooling2D()(x)
    return building.finish(inputs, x, name or f"mobilenet_{alpha:0.2f}_{rows}", weights)

