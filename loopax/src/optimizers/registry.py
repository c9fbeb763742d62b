"""The optimizer names `get` / `serialize` / `deserialize` resolve, each class
registered where it is defined (`@register_optimizer`): a wrapper such as
`LossScaleOptimizer` re-creates its inner optimizer from this table without
importing the package `__init__` that lists them. The same decorator fills
`ALL_OPTIMIZERS`, the optimizers proper (the wrappers left out), so adding an
optimizer touches only its own module."""

from __future__ import annotations

from typing import Any

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.utils.registry import Registry

_BY_NAME: dict[str, type[Optimizer]] = {}

# {class name: class} of the optimizers proper, in the order their modules are imported.
ALL_OPTIMIZERS: dict[str, type[Optimizer]] = {}
export("loopax.optimizers.ALL_OPTIMIZERS")(ALL_OPTIMIZERS)

OPTIMIZERS = Registry(
    "optimizer", _BY_NAME, base=Optimizer, ignore_case=True,
    accepts="an Optimizer instance, a config dict, or an optax.GradientTransformation")


def register_optimizer(cls: type[Optimizer] | None = None, *, wrapper: bool = False,
                       ) -> Any:
    """Class decorator: makes `cls` resolvable by its name (any letter case), in
    `optimizers.get` and in any config (`serialization.deserialize`), and lists it in
    `ALL_OPTIMIZERS` unless it is a `wrapper` of another optimizer
    (`@register_optimizer(wrapper=True)`)."""
    def register(cls: type[Optimizer]) -> type[Optimizer]:
        _BY_NAME[cls.__name__] = cls
        if not wrapper:
            ALL_OPTIMIZERS[cls.__name__] = cls
        serialization.register_builtins("optimizer", [cls])
        return cls

    return register if cls is None else register(cls)
