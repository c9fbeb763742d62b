"""Adafactor (Shazeer & Stern, 2018), Keras's form.

For a variable of rank >= 2 the second moment of the last two axes is kept
factored, as row means `r` and column means `c`:

    rho   = min(lr, 1 / sqrt(t))                 (relative step size)
    alpha = max(epsilon_2, rms(var)) * rho
    g2    = g^2 + epsilon_1;   beta = 1 - t^beta_2_decay
    r = beta r + (1 - beta) mean(g2, -1);   c = beta c + (1 - beta) mean(g2, -2)
    v = (r / mean(r)) outer c     (rank < 2: v = beta v + (1 - beta) g2)
    u = g / sqrt(v);   var -= alpha * u / max(1, rms(u) / clip_threshold)
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from loopax.src.api_export import export
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.optimizers.registry import register_optimizer


class KerasAdafactorState(NamedTuple):
    r: Any         # row means, shape[:-1] (a scalar placeholder for rank < 2)
    c: Any         # column means, shape[:-2] + shape[-1:] (placeholder for rank < 2)
    velocity: Any  # the (reconstructed) second moment, var-shaped


def _rms(x):
    return jnp.sqrt(jnp.mean(jnp.square(x)))


def keras_adafactor(beta_2_decay: float = -0.8, epsilon_1: float = 1e-30,
                    epsilon_2: float = 1e-3,
                    clip_threshold: float = 1.0) -> optax.GradientTransformation:
    """The whole Adafactor update (it needs the parameters and the rate)."""

    def init_fn(params):
        def rows(p):
            return jnp.zeros(p.shape[:-1] if p.ndim >= 2 else (), p.dtype)

        def cols(p):
            return jnp.zeros(p.shape[:-2] + p.shape[-1:] if p.ndim >= 2 else (), p.dtype)

        return KerasAdafactorState(jax.tree.map(rows, params), jax.tree.map(cols, params),
                                   optax.tree.zeros_like(params))

    def update_fn(updates, state, params, *, learning_rate, step, **extra):
        t = jnp.asarray(step, jnp.float32) + 1.0
        rho = jnp.minimum(learning_rate, 1.0 / jnp.sqrt(t))
        beta = 1.0 - t ** beta_2_decay
        grads, treedef = jax.tree.flatten(updates)
        leaves = zip(grads, *(treedef.flatten_up_to(x)
                              for x in (params, state.r, state.c, state.velocity)))
        new_updates, new_r, new_c, new_v = [], [], [], []
        for g, p, r, c, v in leaves:
            g2 = jnp.square(g) + epsilon_1
            if p.ndim >= 2:
                r = beta * r + (1.0 - beta) * jnp.mean(g2, axis=-1)
                c = beta * c + (1.0 - beta) * jnp.mean(g2, axis=-2)
                v = (r / jnp.mean(r, axis=-1, keepdims=True))[..., None] * c[..., None, :]
            else:
                v = beta * v + (1.0 - beta) * g2
            u = g / jnp.sqrt(v)
            u = u / jnp.maximum(1.0, _rms(u) / clip_threshold)
            alpha = jnp.maximum(epsilon_2, _rms(p)) * rho
            new_updates.append((-alpha * u).astype(g.dtype))
            new_r.append(r.astype(p.dtype))
            new_c.append(c.astype(p.dtype))
            new_v.append(v.astype(p.dtype))
        unflat = lambda xs: treedef.unflatten(xs)
        return unflat(new_updates), KerasAdafactorState(unflat(new_r), unflat(new_c),
                                                        unflat(new_v))

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


@export("loopax.optimizers.Adafactor")
@register_optimizer
class Adafactor(Optimizer):
    """Adafactor: memory-light adaptive steps with factored second moments.

    Args:
        learning_rate: float or schedule (default 0.001); the step is
            `min(learning_rate, 1/sqrt(t))` times the variable's RMS.
        beta_2_decay: the second-moment decay is `1 - t^beta_2_decay`.
        epsilon_1: added to `g^2`.
        epsilon_2: floor of the variable RMS used to scale the step.
        clip_threshold: the update's RMS is clipped to it.
        relative_step: kept for Keras compatibility (Keras 3 always uses the
            relative step).
        **kwargs: the base `Optimizer` arguments.
    """

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30,
                 epsilon_2=1e-3, clip_threshold=1.0, relative_step=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_2_decay = beta_2_decay
        self.epsilon_1 = epsilon_1
        self.epsilon_2 = epsilon_2
        self.clip_threshold = clip_threshold
        self.relative_step = relative_step

    def _transform(self):
        return keras_adafactor(self.beta_2_decay, self.epsilon_1, self.epsilon_2,
                               self.clip_threshold)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "beta_2_decay": self.beta_2_decay,
                "epsilon_1": self.epsilon_1, "epsilon_2": self.epsilon_2,
                "clip_threshold": self.clip_threshold, "relative_step": self.relative_step}
