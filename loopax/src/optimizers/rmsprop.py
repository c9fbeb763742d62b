"""RMSprop and Adagrad: optax's `scale_by_rms` / `scale_by_stddev` /
`scale_by_rss`, whose forms (epsilon inside the square root) are Keras's.

RMSprop's momentum, as in Keras, accumulates the learning-rate-scaled step:
`mom = momentum * mom + lr * g / sqrt(v + eps)`, `var -= mom`.
"""

from typing import Any

import optax

from loopax.src.api_export import export
from loopax.src.optimizers.optimizer import Optimizer, scale_by_learning_rate
from loopax.src.optimizers.registry import register_optimizer


@export("loopax.optimizers.RMSprop")
@register_optimizer
class RMSprop(Optimizer):
    """RMSprop (Hinton, 2012): `var -= lr * g / sqrt(v + eps)`, `v` the moving
    average of `g^2`.

    Args:
        learning_rate: float or schedule (default 0.001).
        rho: decay of the moving averages.
        momentum: momentum of the step (0 for none).
        epsilon: added to `v` inside the square root.
        centered: divide by the centered second moment `v - mean(g)^2`.
        **kwargs: the base `Optimizer` arguments.
    """

    _slot_aliases = {"nu": "velocity", "mu": "average_gradient", "trace": "momentum"}

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho = rho
        self.momentum = momentum
        self.epsilon = epsilon
        self.centered = centered

    def _transform(self):
        scale = optax.scale_by_stddev if self.centered else optax.scale_by_rms
        parts = [scale(decay=self.rho, eps=self.epsilon, initial_scale=0.0),
                 scale_by_learning_rate()]
        if self.momentum:
            parts.append(optax.trace(decay=self.momentum))
        return optax.chain(*parts)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}


@export("loopax.optimizers.Adagrad")
@register_optimizer
class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011): `acc += g^2`, `var -= lr * g / sqrt(acc + eps)`.

    Args:
        learning_rate: float or schedule (default 0.001).
        initial_accumulator_value: starting value of `acc`.
        epsilon: added to `acc` inside the square root.
        **kwargs: the base `Optimizer` arguments.
    """

    _slot_aliases = {"sum_of_squares": "accumulator"}

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def _transform(self):
        return optax.chain(
            optax.scale_by_rss(self.initial_accumulator_value, self.epsilon),
            scale_by_learning_rate())

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}


@export("loopax.optimizers.Adadelta")
@register_optimizer
class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012): `delta = sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) * g`,
    `var -= lr * delta` (optax's `scale_by_adadelta`, which is Keras's form).

    Args:
        learning_rate: float or schedule (default 0.001).
        rho: decay of the running averages.
        epsilon: added inside both square roots.
        **kwargs: the base `Optimizer` arguments.
    """

    _slot_aliases = {"e_g": "accumulated_grad", "e_x": "accumulated_delta_var"}

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def _transform(self):
        return optax.chain(optax.scale_by_adadelta(rho=self.rho, eps=self.epsilon),
                           scale_by_learning_rate())

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}
