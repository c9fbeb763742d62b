"""Reading and setting `model.optimizer.learning_rate` from a callback."""

import numpy as np


def _optimizer(model, owner):
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise ValueError(
            f"{owner} needs `model.optimizer.learning_rate`; compile the model with an "
            "optimizer before training.")
    return optimizer


def get_learning_rate(model, owner):
    """The current learning rate as a Python float."""
    learning_rate = _optimizer(model, owner).learning_rate
    try:
        return float(np.asarray(learning_rate))
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{owner}: the optimizer's learning_rate is {learning_rate!r}, not a number; "
            "a callback cannot change a learning-rate schedule. Compile with a float "
            "learning rate.") from error


def set_learning_rate(model, value, owner):
    """Sets the optimizer's learning rate (takes effect without recompiling)."""
    _optimizer(model, owner).learning_rate = value
