"""FTRL-Proximal (McMahan et al., 2013) in Keras's form.

Per variable `w`, with `n` the accumulated squared gradient, `z` the linear
term, `p = -learning_rate_power` and `lr` the learning rate:

    g_s   = g + 2 * l2_shrinkage * w
    n'    = n + g^2
    z'    = z + g_s - (n'^p - n^p) / lr * w
    q     = n'^p / lr + 2 * (l2 + beta / (2 lr))
    w'    = (clip(z', -l1, l1) - z') / q

`w'` is a new value rather than a step, so the transformation returns
`w' - w` (the optax convention) and needs the parameters.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from loopax.src.api_export import export
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.optimizers.registry import register_optimizer


class FtrlState(NamedTuple):
    accumulator: Any  # n: the sum of squared gradients (from its initial value)
    linear: Any       # z


def scale_by_keras_ftrl(learning_rate_power: float = -0.5,
                        initial_accumulator_value: float = 0.1, l1: float = 0.0,
                        l2: float = 0.0, l2_shrinkage: float = 0.0,
                        beta: float = 0.0) -> optax.GradientTransformation:
    """optax transformation of Keras's FTRL step (see the module doc); reads the
    rate from the `learning_rate` extra argument of `update`."""

    def init_fn(params):
        return FtrlState(
            jax.tree.map(lambda p: jnp.full_like(p, initial_accumulator_value), params),
            optax.tree.zeros_like(params))

    def update_fn(updates, state, params, *, learning_rate, **extra):
        del extra
        power = -learning_rate_power

        def step(g, w, n, z):
            lr = jnp.asarray(learning_rate, w.dtype)
            new_n = n + g * g
            shrunk_g = g + 2 * l2_shrinkage * w
            new_z = z + shrunk_g - (new_n ** power - n ** power) / lr * w
            quadratic = new_n ** power / lr + 2 * (l2 + beta / (2.0 * lr))
            new_w = (jnp.clip(new_z, -l1, l1) - new_z) / quadratic
            return new_w - w, new_n, new_z

        out = jax.tree.map(step, updates, params, state.accumulator, state.linear)
        leaf = lambda x: isinstance(x, tuple)
        pick = lambda i: jax.tree.map(lambda t: t[i], out, is_leaf=leaf)
        return pick(0), FtrlState(pick(1), pick(2))

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


@export("loopax.optimizers.Ftrl")
@register_optimizer
class Ftrl(Optimizer):
    """FTRL-Proximal ("Follow The Regularized Leader"), Keras's variant with
    L2 shrinkage and `beta`: sparse, per-coordinate rates for wide linear
    models (McMahan et al., 2013, "Ad Click Prediction").

    Args:
        learning_rate: float or schedule (default 0.001).
        learning_rate_power: `<= 0`; how the per-coordinate rate falls with
            the accumulated squared gradient (`-0.5`: `1/sqrt(n)`; 0: fixed).
        initial_accumulator_value: `>= 0`, the accumulator's starting value.
        l1_regularization_strength: `>= 0`, the L1 strength (zeros out
            coordinates whose `|z|` stays below it).
        l2_regularization_strength: `>= 0`, the L2 strength of the stabilising
            term.
        l2_shrinkage_regularization_strength: `>= 0`, an L2 penalty added to
            the gradient (magnitude shrinkage).
        beta: adds `beta / (2 * learning_rate)` to the L2 strength.
        **kwargs: the base `Optimizer` arguments (weight_decay, clipnorm, ...).

    Raises:
        ValueError: a strength or `initial_accumulator_value` is negative, or
            `learning_rate_power` is positive.
    """

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, l2_shrinkage_regularization_strength=0.0,
                 beta=0.0, **kwargs):
        for name, value in (("initial_accumulator_value", initial_accumulator_value),
                            ("l1_regularization_strength", l1_regularization_strength),
                            ("l2_regularization_strength", l2_regularization_strength),
                            ("l2_shrinkage_regularization_strength",
                             l2_shrinkage_regularization_strength)):
            if value < 0.0:
                raise ValueError(f"Ftrl: `{name}` must be >= 0, got {value!r}.")
        if learning_rate_power > 0.0:
            raise ValueError("Ftrl: `learning_rate_power` must be <= 0 (e.g. -0.5), got "
                             f"{learning_rate_power!r}.")
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self.beta = beta

    def _transform(self):
        return scale_by_keras_ftrl(
            self.learning_rate_power, self.initial_accumulator_value,
            self.l1_regularization_strength, self.l2_regularization_strength,
            self.l2_shrinkage_regularization_strength, self.beta)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(),
                "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "l2_shrinkage_regularization_strength":
                    self.l2_shrinkage_regularization_strength,
                "beta": self.beta}
