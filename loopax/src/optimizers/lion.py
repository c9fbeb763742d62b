"""Lion (Chen et al., 2023): optax's `scale_by_lion`, which is Keras's form:
`var -= lr * sign(b1 m + (1 - b1) g)`, then `m = b2 m + (1 - b2) g`."""

from typing import Any

import optax

from loopax.src.api_export import export
from loopax.src.optimizers.optimizer import Optimizer, scale_by_learning_rate
from loopax.src.optimizers.registry import register_optimizer


@export("loopax.optimizers.Lion")
@register_optimizer
class Lion(Optimizer):
    """Lion: sign of an interpolated momentum.

    Args:
        learning_rate: float or schedule (default 0.001; use a rate 3-10x
            smaller than for AdamW).
        beta_1: interpolation between momentum and gradient for the step.
        beta_2: decay of the momentum.
        **kwargs: the base `Optimizer` arguments.
    """

    _slot_aliases = {"mu": "momentum"}

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, **kwargs):
        if not 0 < beta_1 <= 1:
            raise ValueError(f"Lion: `beta_1` must be in (0, 1], got {beta_1!r}.")
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2

    def _transform(self):
        return optax.chain(optax.scale_by_lion(b1=self.beta_1, b2=self.beta_2),
                           scale_by_learning_rate())

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2}
