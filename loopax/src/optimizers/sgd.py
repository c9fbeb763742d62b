"""SGD with optional (Nesterov) momentum, Keras's form.

Keras keeps the learning rate inside the momentum buffer:
`m = momentum * m - lr * g`, then `var += m` (or, with Nesterov,
`var += momentum * m - lr * g`). That is optax's `trace` applied after
scaling by `-lr`, so a changing learning rate behaves as in Keras.
"""

from typing import Any

import optax

from loopax.src.api_export import export
from loopax.src.optimizers.optimizer import Optimizer, scale_by_learning_rate
from loopax.src.optimizers.registry import register_optimizer


@export("loopax.optimizers.SGD")
@register_optimizer
class SGD(Optimizer):
    """Gradient descent: `var -= lr * g`, optionally with momentum.

    Args:
        learning_rate: float or schedule (default 0.01).
        momentum: float in [0, 1]; 0 for plain gradient descent.
        nesterov: use Nesterov momentum.
        **kwargs: the base `Optimizer` arguments (weight_decay, clipnorm, ...).
    """

    _slot_aliases = {"trace": "momentum"}

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, **kwargs):
        if not isinstance(momentum, (int, float)) or not 0 <= momentum <= 1:
            raise ValueError(f"SGD: `momentum` must be a float in [0, 1], got {momentum!r}.")
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.nesterov = nesterov

    def _transform(self):
        if not self.momentum:
            return optax.chain(scale_by_learning_rate())
        return optax.chain(scale_by_learning_rate(),
                           optax.trace(decay=self.momentum, nesterov=self.nesterov))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}
