"""Decoupled weight decay (Loshchilov & Hutter; Keras's `weight_decay`).

Before the update, each weight not excluded shrinks in proportion to the
current learning rate `lr`, independently of the gradient:

    w <- w - w * (rate * lr)
"""

from __future__ import annotations

import re
from typing import Sequence

import jax.numpy as jnp

from loopax.src.array_types import Array
from loopax.src.state import Variable


def decayed(weight: Array, rate: float, learning_rate: Array) -> Array:
    """`weight - weight * (rate * learning_rate)`, in the weight's dtype."""
    return weight - weight * jnp.asarray(rate * learning_rate, weight.dtype)


class DecayExclusions:
    """The variables weight decay skips: given ones, and those whose name
    matches one of `var_names` (`re.search`), as Keras's
    `exclude_from_weight_decay`."""

    def __init__(self, var_list: Sequence[Variable] | None = None,
                 var_names: Sequence[str] | None = None):
        self._ids = {id(v) for v in var_list or ()}
        self._pattern = re.compile("|".join(set(var_names))) if var_names else None

    def __contains__(self, variable: Variable) -> bool:
        if id(variable) in self._ids:
            return True
        return self._pattern is not None and self._pattern.search(variable.name) is not None
