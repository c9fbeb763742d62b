"""Schedule-Free AdamW (Defazio et al., 2024) in Keras 3.15's form.

Per variable, the model holds `y`, the point gradients are taken at; the
optimizer keeps `z` (Keras's `momentum` slot, starting at the variable's
value) and the Adam second moment `v` (`velocity`). With `t` the step
(1-based), `lr` warmed up linearly over `warmup_steps`:

    v  = v + (g^2 - v) (1 - beta_2)
    z' = z - lr g / (sqrt(v / (1 - beta_2^t)) + epsilon)
    x  = (y - (1 - beta_1) z) / beta_1                 (the average, recovered)
    x' = (1 - 1/t) x + (1/t) z'
    y' = (1 - beta_1) z' + beta_1 x'

`y'` is a new value, so the transformation returns `y' - y` (the optax
convention) and needs the parameters. As in Keras, the variables stay at
`y` for evaluation too (the averaged `x` is not swapped in).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from loopax.src.api_export import export
from loopax.src.naming import unique_name
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.optimizers.registry import register_optimizer


class ScheduleFreeState(NamedTuple):
    momentum: Any  # z: the sequence the gradient steps move
    velocity: Any  # v: the Adam second moment


def scale_by_schedule_free_adamw(beta_1: float = 0.9, beta_2: float = 0.999,
                                 epsilon: float = 1e-8,
                                 warmup_steps: int = 0) -> optax.GradientTransformation:
    """optax transformation of Keras's Schedule-Free AdamW step (see the module doc);
    reads the rate and the step from the `learning_rate` and `step` extra arguments."""

    def init_fn(params):
        return ScheduleFreeState(jax.tree.map(jnp.array, params),
                                 optax.tree.zeros_like(params))

    def update_fn(updates, state, params, *, learning_rate, step, **extra):
        del extra

        def one(g, y, z, v):
            dtype = y.dtype
            t = jnp.asarray(step + 1, dtype)
            lr = jnp.asarray(learning_rate, dtype)
            if warmup_steps > 0:
                lr = lr * jnp.minimum(t / warmup_steps, 1.0)
            new_v = v + (g * g - v) * (1 - beta_2)
            denom = jnp.sqrt(new_v / (1 - jnp.asarray(beta_2, dtype) ** t)) + epsilon
            new_z = z - lr * g / denom
            weight = 1.0 / t
            x = (y - (1 - beta_1) * z) / beta_1
            new_x = (1 - weight) * x + weight * new_z
            new_y = (1 - beta_1) * new_z + beta_1 * new_x
            return new_y - y, new_z, new_v

        out = jax.tree.map(one, updates, params, state.momentum, state.velocity)
        leaf = lambda x: isinstance(x, tuple)
        pick = lambda i: jax.tree.map(lambda t: t[i], out, is_leaf=leaf)
        return pick(0), ScheduleFreeState(pick(1), pick(2))

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


@export("loopax.optimizers.ScheduleFreeAdamW")
@register_optimizer
class ScheduleFreeAdamW(Optimizer):
    """Schedule-Free AdamW: AdamW without a learning-rate schedule, by interpolating
    between the gradient sequence and its running average (see the module doc).

    Args:
        learning_rate: float or schedule (default 0.0025).
        beta_1: interpolation between `momentum` and the average (default 0.9).
        beta_2: decay of the second moment (default 0.999).
        epsilon: added to the denominator (default 1e-8).
        warmup_steps: the rate grows linearly from 0 over this many steps (default 0).
        **kwargs: the base `Optimizer` arguments (`weight_decay`, clipping, ...).

    Raises:
        ValueError: `beta_1` is not in (0, 1] or `warmup_steps` is negative.
    """

    def __init__(self, learning_rate=0.0025, beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                 warmup_steps=0, name=None, **kwargs):
        if not 0 < beta_1 <= 1:
            raise ValueError(f"ScheduleFreeAdamW: `beta_1` must be in (0, 1] (x is recovered "
                             f"by dividing by it), got {beta_1!r}.")
        if not (isinstance(warmup_steps, int) and warmup_steps >= 0):
            raise ValueError("ScheduleFreeAdamW: `warmup_steps` must be an int >= 0, got "
                             f"{warmup_steps!r}.")
        super().__init__(learning_rate=learning_rate,
                         name=name or unique_name("schedule_free_adam_w"), **kwargs)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.warmup_steps = warmup_steps

    def _transform(self):
        return scale_by_schedule_free_adamw(self.beta_1, self.beta_2, self.epsilon,
                                            self.warmup_steps)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "warmup_steps": self.warmup_steps}
