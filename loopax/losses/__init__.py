"""Losses: `Loss` classes, per-sample loss functions, and `get` by name."""

from loopax.src.losses import ALL_OBJECTS, Loss, deserialize, get, reduce_weighted_values, serialize
from loopax.src.losses.losses import *  # noqa: F401,F403
from loopax.src.losses.losses import __all__ as _names

__all__ = ["Loss", "get", "serialize", "deserialize", "reduce_weighted_values"] + list(_names)
