"""The part every application shares: the input, the classification head or
pooling, the model, and its weights."""

from __future__ import annotations

from loopax.src.applications import imagenet_utils
from loopax.src.layers import input_layer
from loopax.src.layers.core import Dense
from loopax.src.layers.pooling import GlobalAveragePooling2D, GlobalMaxPooling2D
from loopax.src.models.functional import Functional


def image_input(input_tensor, input_shape):
    """A new `Input(input_shape)`, or the given symbolic `input_tensor`."""
    if input_tensor is not None:
        return input_tensor
    return input_layer.Input(shape=input_shape)


def classifier_head(x, include_top, pooling, classes, classifier_activation, pool_names):
    """`include_top`: global average pooling + Dense(`classes`) named
    "predictions"; otherwise optional global pooling (`pooling` "avg"/"max")."""
    avg_name, max_name = pool_names
    if include_top:
        x = GlobalAveragePooling2D(name=avg_name)(x)
        return Dense(classes, activation=classifier_activation, name="predictions")(x)
    if pooling == "avg":
        return GlobalAveragePooling2D(name=avg_name)(x)
    if pooling == "max":
        return GlobalMaxPooling2D(name=max_name)(x)
    return x


def finish(inputs, outputs, name, weights):
    model = Functional(inputs, outputs, name=name)
    if weights is not None:
        imagenet_utils.load_application_weights(model, weights)
    return model
