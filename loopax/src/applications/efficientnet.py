"""EfficientNetB0 (Tan & Le 2019): MBConv blocks with squeeze-and-excitation;
the input rescaling/normalization is part of the model, as in Keras."""

from __future__ import annotations

import math

from loopax.src.applications import building, imagenet_utils
from loopax.src.layers.convolutional import Conv2D
from loopax.src.layers.convolutional_depthwise import DepthwiseConv2D
from loopax.src.layers.core import Activation, Dense, Dropout, Reshape
from loopax.src.layers.merging import add, multiply
from loopax.src.layers.normalization import BatchNormalization
from loopax.src.layers.pooling import GlobalAveragePooling2D, GlobalMaxPooling2D
from loopax.src.layers.preprocessing import Normalization, Rescaling
from loopax.src.layers.reshaping import ZeroPadding2D

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


def EfficientNetB0(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                   pooling=None, classes=1000, classifier_activation="softmax",
                   name="efficientnetb0", drop_connect_rate=0.2, dropout_rate=0.2):
    """EfficientNetB0 on raw `[0, 255]` RGB images (the model rescales and
    normalizes them itself; `preprocess_input` is the identity).

    Args:
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
        name: The model's name (default "efficientnetb0").
        drop_connect_rate: The stochastic-depth rate; block i of n drops with rate
            `drop_connect_rate · i / n` (default 0.2).
        dropout_rate: Dropout before the top's Dense layer (default 0.2).

    Returns:
        A functional `Model`: `(batch, height, width, 3)` float images ->
        `(batch, classes)` with the top, else the features.

    Raises:
        OSError: the ImageNet file could not be downloaded (pass a local path).
        ValueError: a bad argument: a missing weights file, an unknown
            `pooling`, non-positive `classes`, or an `input_shape` that does not fit.
    """
    owner = "EfficientNetB0"
    imagenet_utils.check_arguments(weights, include_top, classes, pooling, owner)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 224, 32, include_top,
                                                    weights, owner)
    weights = imagenet_utils.resolve_weights(weights, owner, include_top)
    inputs = building.image_input(input_tensor, input_shape)
    x = Rescaling(1.0 / 255.0)(inputs)
    x = Normalization(axis=3)(x)
    if weights is not None:  # as Keras for ImageNet weights: divide by the std
        x = Rescaling([1.0 / math.sqrt(s) for s in IMAGENET_STDDEV_RGB])(x)
    x = ZeroPadding2D(imagenet_utils.correct_pad(tuple(x.shape[1:3]), 3),
                      name="stem_conv_pad")(x)
    x = Conv2D(32, 3, strides=2, padding="valid", use_bias=False,
               kernel_initializer=CONV_INIT, name="stem_conv")(x)
    x = BatchNormalization(axis=3, name="stem_bn")(x)
    x = Activation("swish", name="stem_activation")(x)
    total = float(sum(stage[1] for stage in _STAGES))
    done = 0
    for i, (kernel, repeats, f_in, f_out, expand, stride) in enumerate(_STAGES):
        for j in range(repeats):
            x = mbconv_block(x, drop_connect_rate * done / total, f"block{i + 1}{chr(j + 97)}_",
                             f_in if j == 0 else f_out, f_out, kernel,
                             stride if j == 0 else 1, expand)
            done += 1
    x = Conv2D(1280, 1, padding="same", use_bias=False, kernel_initializer=CONV_INIT,
               name="top_conv")(x)
    x = BatchNormalization(axis=3, name="top_bn")(x)
    x = Activation("swish", name="top_activation")(x)
    if include_top:
        x = GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = Dropout(dropout_rate, name="top_dropout")(x)
        x = Dense(classes, activation=classifier_activation, kernel_initializer=DENSE_INIT,
                  name="predictions")(x)
    elif pooling == "avg":
        x = GlobalAveragePooling2D(name="avg_pool")(x)
    elif pooling == "max":
        x = GlobalMaxPooling2D(name="max_pool")(x)
    return building.finish(inputs, x, name, weights)


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
