"""Losses: the registry (`get`, `serialize`, `deserialize`) and `resolve`,
which turns what `compile(loss=...)` accepts into a `Loss` object."""

from __future__ import annotations

import inspect

from loopax.src.api_export import export
from loopax.src.losses import losses as _losses
from loopax.src.losses.loss import (
    Loss,
    reduce_weighted_values,
    squeeze_or_expand_to_same_rank,
    standardize_reduction,
)
from loopax.src.losses.losses import *  # noqa: F403  (the loss functions and classes)
from loopax.src.losses.losses import LOSS_CLASSES, LOSS_FUNCTIONS, LossFunctionWrapper
from loopax.src.utils.registry import Registry

ALL_OBJECTS = {cls.__name__: cls for cls in (Loss, LossFunctionWrapper) + LOSS_CLASSES}
ALL_OBJECTS.update({fn.__name__: fn for fn in LOSS_FUNCTIONS})
ALL_OBJECTS.update({
    "mse": _losses.mse, "MSE": _losses.mse,
    "mae": _losses.mae, "MAE": _losses.mae,
    "mape": _losses.mape, "MAPE": _losses.mape,
    "msle": _losses.msle, "MSLE": _losses.msle,
    "kld": _losses.kld, "KLD": _losses.kld,
    "kullback_leibler_divergence": _losses.kl_divergence,
    "logcosh": _losses.log_cosh,
    "bce": _losses.bce, "BCE": _losses.bce,
})


_REGISTRY = Registry(
    "loss", ALL_OBJECTS, base=Loss, unlisted=("Loss", "LossFunctionWrapper"),
    accepts="a Loss object, a Loss class, or a function fn(y_true, y_pred) -> per-sample losses")


@export("loopax.losses.get")
def get(identifier):
    """A loss from a name, class, instance, config dict or callable (Keras's rule).

    Function names ("mse", "categorical_crossentropy") give the function; class
    names ("MeanSquaredError") and classes give a default instance; instances
    and callables are returned as they are. None gives None.

    Args:
        identifier: None, a name, a Loss class or instance, a config dict, or a
            function `fn(y_true, y_pred)`.

    Returns:
        The loss (a Loss object or a function), or None.

    Raises:
        ValueError: an unknown name, or something that is neither of these.
    """
    return _REGISTRY.get(identifier)


@export("loopax.losses.serialize")
def serialize(loss):
    """{"class_name", "config"} for a Loss object, or a function's name.

    Args:
        loss: A Loss object or a built-in loss function; a name, a dict or None
            passes through unchanged (as in Keras).

    Returns:
        A JSON-serializable dict (or the name) that `deserialize` turns back into it.

    Raises:
        ValueError: `loss` is neither a Loss object, a built-in function nor a plain value.
    """
    if loss is None or isinstance(loss, (str, dict)):
        return loss
    config = _REGISTRY.serialize(loss)
    if config is loss:
        raise ValueError(f"Cannot serialize loss {loss!r}: not a Loss object or a built-in "
                         "function.")
    return config


@export("loopax.losses.deserialize")
def deserialize(config, custom_objects=None):
    """The loss `serialize` described (`custom_objects` maps extra class names).

    Args:
        config: A `serialize()` dict, or a name.
        custom_objects: `{name: class}` for custom losses.

    Returns:
        A new Loss object, or the function a name stands for.

    Raises:
        ValueError: the dict has no `class_name`, or it names an unknown class.
    """
    return _REGISTRY.deserialize(config, custom_objects)


def is_binary_or_sparse_categorical(y_true_shape, y_pred_shape):
    """(is_binary, is_sparse_categorical) from the label and output shapes.

    Binary: one output unit. Sparse: labels of lower rank than the output, or
    a trailing label axis of 1 against several output units (Keras's rule).
    """
    t, p = tuple(y_true_shape), tuple(y_pred_shape)
    is_binary = bool(p) and p[-1] == 1
    is_sparse = len(t) < len(p) or (bool(t) and bool(p) and t[-1] == 1 and p[-1] > 1)
    return is_binary, is_sparse


def resolve(identifier, y_true_shape=None, y_pred_shape=None):
    """The `Loss` object `compile(loss=identifier)` uses for one output.

    "crossentropy" / "ce" pick binary, sparse or categorical crossentropy from
    the shapes; functions are wrapped in a `LossFunctionWrapper` named after
    the identifier ("mse" stays "mse"). None gives None.
    """
    if identifier is None:
        return None
    if isinstance(identifier, str) and identifier.lower() in ("crossentropy", "ce"):
        if y_true_shape is None or y_pred_shape is None:
            raise ValueError(f"loss={identifier!r} needs the label and output shapes to "
                             "choose binary, sparse or categorical crossentropy.")
        is_binary, is_sparse = is_binary_or_sparse_categorical(y_true_shape, y_pred_shape)
        obj = (_losses.binary_crossentropy if is_binary else
               _losses.sparse_categorical_crossentropy if is_sparse else
               _losses.categorical_crossentropy)
    else:
        obj = get(identifier)
    if isinstance(obj, Loss):
        return obj
    name = identifier if isinstance(identifier, str) else getattr(obj, "__name__", None)
    return LossFunctionWrapper(obj, name=name)


def loss_kind(loss):
    """"binary", "sparse", "categorical" or None: which labels `loss` expects.

    Accepts a name, function or Loss object; used to pick the accuracy metric.
    """
    if isinstance(loss, str):
        if loss not in ALL_OBJECTS:
            return None
        loss = ALL_OBJECTS[loss]
    fn = getattr(loss, "fn", loss) if isinstance(loss, LossFunctionWrapper) else loss
    if inspect.isclass(fn):
        fn = {_losses.BinaryCrossentropy: _losses.binary_crossentropy,
              _losses.BinaryFocalCrossentropy: _losses.binary_focal_crossentropy,
              _losses.SparseCategoricalCrossentropy: _losses.sparse_categorical_crossentropy,
              _losses.CategoricalCrossentropy: _losses.categorical_crossentropy,
              _losses.Hinge: _losses.hinge, _losses.SquaredHinge: _losses.squared_hinge,
              _losses.CategoricalHinge: _losses.categorical_hinge,
              _losses.CategoricalFocalCrossentropy: _losses.categorical_focal_crossentropy,
              _losses.CategoricalGeneralizedCrossEntropy:
                  _losses.categorical_generalized_cross_entropy,
              _losses.Circle: _losses.circle}.get(fn)
    if fn in (_losses.binary_crossentropy, _losses.binary_focal_crossentropy,
              _losses.hinge, _losses.squared_hinge):
        return "binary"
    # Circle takes one integer label per embedding row: the sparse shapes.
    if fn in (_losses.sparse_categorical_crossentropy,
              _losses.categorical_generalized_cross_entropy, _losses.circle):
        return "sparse"
    if fn in (_losses.categorical_crossentropy, _losses.categorical_hinge,
              _losses.categorical_focal_crossentropy):
        return "categorical"
    return None
