"""The optimizer names `get` / `serialize` / `deserialize` resolve, each class
registered where it is defined (`@register_optimizer`): a wrapper such as
`LossScaleOptimizer` re-creates its inner optimizer from this table without
importing the package `__init__` that lists them."""

from __future__ import annotations

from loopax.src import serialization
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.utils.registry import Registry

_BY_NAME: dict[str, type[Optimizer]] = {}

OPTIMIZERS = Registry(
    "optimizer", _BY_NAME, base=Optimizer, ignore_case=True,
    accepts="an Optimizer instance, a config dict, or an optax.GradientTransformation")


def register_optimizer(cls: type[Optimizer]) -> type[Optimizer]:
    """Class decorator: makes `cls` resolvable by its name (any letter case), in
    `optimizers.get` and in any config (`serialization.deserialize`)."""
    _BY_NAME[cls.__name__] = cls
    serialization.register_builtins("optimizer", [cls])
    return cls
