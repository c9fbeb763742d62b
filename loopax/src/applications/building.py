"""The part every application shares: the input, the classification head or
pooling, the model, and its weights."""

from __future__ import annotations

from loopax.src.applications import imagenet_utils
from loopax.src.layers import input_layer
from loopax.src.layers.core.dense import Dense
from loopax.src.layers.pooling.pooling import GlobalAveragePooling2D, GlobalMaxPooling2D
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


def prepare(owner, weights, include_top, classes, pooling, input_tensor, input_shape,
            default_size=224, min_size=32, **name_fields):
    """The steps every application starts with: arguments checked, the input
    shape settled, `weights` resolved to a local path (or None).

    Returns:
        `(inputs, input_shape, weights)`: the symbolic input, its shape, the path.
    """
    imagenet_utils.check_arguments(weights, include_top, classes, pooling, owner)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size, min_size,
                                                    include_top, weights, owner)
    weights = imagenet_utils.resolve_weights(weights, owner, include_top, **name_fields)
    return image_input(input_tensor, input_shape), input_shape, weights


def named_variant(build, owner, module, doc, **fixed):
    """The public constructor `owner(include_top=True, weights="imagenet", ...)`
    (Keras's signature, default name `owner.lower()`) calling `build(**fixed, ...)`:
    one builder serves every size of a family (ResNet50/101/152, DenseNet121/169/201).
    `module` names the `loopax.applications` module in the docstring."""

    def constructor(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                    pooling=None, classes=1000, classifier_activation="softmax",
                    name=owner.lower()):
        return build(include_top=include_top, weights=weights, input_tensor=input_tensor,
                     input_shape=input_shape, pooling=pooling, classes=classes,
                     classifier_activation=classifier_activation, name=name, owner=owner,
                     **fixed)

    constructor.__name__ = constructor.__qualname__ = owner
    constructor.__module__ = build.__module__   # where the variant is assigned (docs tools)
    constructor.__doc__ = doc.format(owner=owner, module=module) + ARGS_DOC
    return constructor


ARGS_DOC = """

    Args:
        include_top: Whether to end with the ImageNet classifier (default True);
            False ends at the last convolution block (see `pooling`).
        weights: "imagenet" (the default, as in Keras): Keras's published ImageNet
            file, downloaded once into `$LOOPAX_HOME/models` and hash-checked;
            None: random initialization; or a local path (a published file,
            a `.weights.h5` or a `.keras` file).
        input_tensor: A symbolic tensor (from `loopax.Input`) to build on, or None.
        input_shape: `(height, width, channels)`, or None: the family's default
            size with `include_top`, else `(None, None, 3)`; 3 channels with
            pretrained weights.
        pooling: Without the top: None (4-D feature maps), `"avg"` or `"max"` (global
            pooling to `(batch, channels)`).
        classes: The number of classes of the top (default 1000).
        classifier_activation: The top's activation (default `"softmax"`; None gives
            logits).
        name: The model's name (default Keras's).

    Returns:
        A functional `Model`: `(batch, height, width, 3)` float images ->
        `(batch, classes)` with the top, else the features.

    Raises:
        OSError: the ImageNet file could not be downloaded (pass a local path).
        ValueError: a bad argument: a missing weights file, an unknown
            `pooling`, non-positive `classes`, or an `input_shape` that does not fit.
    """
