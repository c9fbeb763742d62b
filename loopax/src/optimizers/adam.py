"""The Adam family in Keras's exact forms: Adam, AdamW, Adamax, Nadam, Lamb.

Each is an optax transformation (moments from `optax.tree`) that produces a
direction, followed by `scale_by_learning_rate`. Keras's forms differ from
optax's own `adam`/`adamax`/`nadam` in where epsilon sits and how bias is
corrected, so users switching from Keras get Keras's numbers:

    Adam:    var -= lr * m * sqrt(1 - b2^t) / (1 - b1^t) / (sqrt(v) + eps)
    Adamax:  var -= lr * m / ((1 - b1^t) * (u + eps)),  u = max(b2 u, |g|)
    Nadam:   Dozat's form with the momentum schedule u_t = b1 (1 - 0.96^t / 2)
    Lamb:    var -= lr * r * m_hat / (sqrt(v_hat) + eps),  r = ||var|| / ||step||

`t` is the 1-based step (`iterations + 1`), received as the `step` extra
argument.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from loopax.src.api_export import export
from loopax.src.optimizers.optimizer import Optimizer, scale_by_learning_rate
from loopax.src.optimizers.registry import register_optimizer


def _step_count(step):
    return jnp.asarray(step, jnp.float32) + 1.0


class _MomentsOptimizer(Optimizer):
    """The hyperparameters the whole family shares: the decay rates of the
    first and second moments and epsilon."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


# ---------------------------------------------------------------- Adam
class KerasAdamState(NamedTuple):
    momentum: Any
    velocity: Any
    velocity_hat: Any  # None unless amsgrad


def scale_by_keras_adam(beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                        amsgrad: bool = False) -> optax.GradientTransformation:
    """Adam's direction, `m * sqrt(1 - b2^t) / (1 - b1^t) / (sqrt(v) + eps)`
    (with amsgrad, `v` is the running maximum of `v`)."""

    def init_fn(params):
        zeros = lambda: optax.tree.zeros_like(params)
        return KerasAdamState(zeros(), zeros(), zeros() if amsgrad else None)

    def update_fn(updates, state, params=None, *, step, **extra):
        t = _step_count(step)
        m = optax.tree.update_moment(updates, state.momentum, beta_1, 1)
        v = optax.tree.update_moment_per_elem_norm(updates, state.velocity, beta_2, 2)
        v_hat = jax.tree.map(jnp.maximum, state.velocity_hat, v) if amsgrad else None
        correction = jnp.sqrt(1.0 - beta_2 ** t) / (1.0 - beta_1 ** t)
        direction = jax.tree.map(
            lambda m, v: m * correction.astype(m.dtype) / (jnp.sqrt(v) + epsilon),
            m, v_hat if amsgrad else v)
        return direction, KerasAdamState(m, v, v_hat)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


@export("loopax.optimizers.Adam")
@register_optimizer
class Adam(_MomentsOptimizer):
    """Adam (Kingma & Ba, 2014) with Keras's defaults and epsilon placement.

    Args:
        learning_rate: float or schedule (default 0.001).
        beta_1, beta_2: decay rates of the first and second moments.
        epsilon: added to `sqrt(v)` after bias correction ("epsilon hat").
        amsgrad: use the running maximum of the second moment (AMSGrad).
        **kwargs: the base `Optimizer` arguments (weight_decay, clipnorm, ...).
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, **kwargs)
        self.amsgrad = amsgrad

    def _transform(self):
        return optax.chain(
            scale_by_keras_adam(self.beta_1, self.beta_2, self.epsilon, self.amsgrad),
            scale_by_learning_rate())

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "amsgrad": self.amsgrad}


@export("loopax.optimizers.AdamW")
@register_optimizer
class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019).

    Before each update, `var -= var * weight_decay * learning_rate`
    (default `weight_decay=0.004`, as in Keras).

    Args:
        learning_rate: A float or a schedule (default 0.001).
        weight_decay: The decoupled decay factor (default 0.004).
        beta_1: The first moment's decay rate (default 0.9).
        beta_2: The second moment's decay rate (default 0.999).
        epsilon: Added to `sqrt(v)` after bias correction (default 1e-7).
        amsgrad: Use the running maximum of the second moment (default False).
        **kwargs: The base `Optimizer` arguments (clipnorm, ema, ...).

    Raises:
        ValueError: `weight_decay` is not a number.
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, **kwargs):
        if not isinstance(weight_decay, (int, float)) or isinstance(weight_decay, bool):
            raise ValueError(f"AdamW: `weight_decay` must be a float, got {weight_decay!r}.")
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, amsgrad=amsgrad, weight_decay=weight_decay,
                         **kwargs)


# ---------------------------------------------------------------- Adamax
class KerasAdamaxState(NamedTuple):
    momentum: Any
    norm: Any


def scale_by_keras_adamax(beta_1: float = 0.9, beta_2: float = 0.999,
                         epsilon: float = 1e-7) -> optax.GradientTransformation:
    """Adamax's direction, `m / ((1 - b1^t) * (u + eps))`, `u = max(b2 u, |g|)`."""

    def init_fn(params):
        return KerasAdamaxState(optax.tree.zeros_like(params), optax.tree.zeros_like(params))

    def update_fn(updates, state, params=None, *, step, **extra):
        t = _step_count(step)
        m = optax.tree.update_moment(updates, state.momentum, beta_1, 1)
        u = jax.tree.map(lambda g, u: jnp.maximum(beta_2 * u, jnp.abs(g)), updates, state.norm)
        bias = 1.0 - beta_1 ** t
        direction = jax.tree.map(
            lambda m, u: m / (bias.astype(m.dtype) * (u + epsilon)), m, u)
        return direction, KerasAdamaxState(m, u)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


@export("loopax.optimizers.Adamax")
@register_optimizer
class Adamax(_MomentsOptimizer):
    """Adamax, Adam's infinity-norm variant (Kingma & Ba, 2014, section 7).

    Args:
        learning_rate: float or schedule (default 0.001).
        beta_1, beta_2: decay rates of the first moment and of the norm.
        epsilon: added to the norm.
        **kwargs: the base `Optimizer` arguments.
    """

    def _transform(self):
        return optax.chain(scale_by_keras_adamax(self.beta_1, self.beta_2, self.epsilon),
                           scale_by_learning_rate())


# ---------------------------------------------------------------- Nadam
class KerasNadamState(NamedTuple):
    momentum: Any
    velocity: Any
    u_product: Any  # prod of the momentum schedule u_1 ... u_t (a scalar)


def scale_by_keras_nadam(beta_1: float = 0.9, beta_2: float = 0.999,
                        epsilon: float = 1e-7) -> optax.GradientTransformation:
    """Nadam's direction (Dozat, 2015) with Keras's momentum schedule
    `u_t = b1 (1 - 0.5 * 0.96^t)`:

        m_hat = u_{t+1} m / (1 - prod_{i<=t+1} u_i) + (1 - u_t) g / (1 - prod_{i<=t} u_i)
        direction = m_hat / (sqrt(v / (1 - b2^t)) + eps)
    """

    def init_fn(params):
        return KerasNadamState(optax.tree.zeros_like(params), optax.tree.zeros_like(params),
                               jnp.ones([], jnp.float32))

    def update_fn(updates, state, params=None, *, step, **extra):
        t = _step_count(step)
        u_t = beta_1 * (1.0 - 0.5 * 0.96 ** t)
        u_next = beta_1 * (1.0 - 0.5 * 0.96 ** (t + 1.0))
        u_product = state.u_product * u_t
        u_product_next = u_product * u_next
        m = optax.tree.update_moment(updates, state.momentum, beta_1, 1)
        v = optax.tree.update_moment_per_elem_norm(updates, state.velocity, beta_2, 2)
        v_correction = 1.0 - beta_2 ** t

        def direction(g, m, v):
            m_hat = u_next * m / (1.0 - u_product_next) + (1.0 - u_t) * g / (1.0 - u_product)
            return (m_hat / (jnp.sqrt(v / v_correction) + epsilon)).astype(g.dtype)

        return (jax.tree.map(direction, updates, m, v),
                KerasNadamState(m, v, u_product))

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


@export("loopax.optimizers.Nadam")
@register_optimizer
class Nadam(_MomentsOptimizer):
    """Nadam: Adam with Nesterov momentum (Dozat, 2015), Keras's form.

    Args:
        learning_rate: float or schedule (default 0.001).
        beta_1, beta_2: decay rates of the first and second moments.
        epsilon: added to the bias-corrected `sqrt(v)`.
        **kwargs: the base `Optimizer` arguments.
    """

    def _transform(self):
        return optax.chain(scale_by_keras_nadam(self.beta_1, self.beta_2, self.epsilon),
                           scale_by_learning_rate())


# ---------------------------------------------------------------- Lamb
class KerasLambState(NamedTuple):
    momentum: Any
    velocity: Any


def scale_by_keras_lamb(beta_1: float = 0.9, beta_2: float = 0.999,
                       epsilon: float = 1e-7) -> optax.GradientTransformation:
    """LAMB's Adam direction before the trust ratio, epsilon after the
    bias-corrected root: `(m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)`.

    (optax's `scale_by_adam` has this form but keeps its own step counter;
    this one reads `step`, like the rest of the family, so the optimizer's
    variables are Keras's: `iterations`, the rate, momenta and velocities.)
    """

    def init_fn(params):
        return KerasLambState(optax.tree.zeros_like(params), optax.tree.zeros_like(params))

    def update_fn(updates, state, params=None, *, step, **extra):
        t = _step_count(step)
        m = optax.tree.update_moment(updates, state.momentum, beta_1, 1)
        v = optax.tree.update_moment_per_elem_norm(updates, state.velocity, beta_2, 2)
        direction = jax.tree.map(
            lambda m, v: ((m / (1.0 - beta_1 ** t)) / (jnp.sqrt(v / (1.0 - beta_2 ** t))
                                                       + epsilon)).astype(m.dtype), m, v)
        return direction, KerasLambState(m, v)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


@export("loopax.optimizers.Lamb")
@register_optimizer
class Lamb(_MomentsOptimizer):
    """LAMB (You et al., 2019): Adam's step rescaled per variable by the trust
    ratio `||var|| / ||step||` (1 when either norm is 0), Keras's form:
    `scale_by_keras_lamb` then optax's `scale_by_trust_ratio`.

    Args:
        learning_rate: float or schedule (default 0.001).
        beta_1, beta_2: decay rates of the first and second moments.
        epsilon: added to the bias-corrected `sqrt(v)`.
        **kwargs: the base `Optimizer` arguments.
    """

    def _transform(self):
        return optax.chain(scale_by_keras_lamb(self.beta_1, self.beta_2, self.epsilon),
                           optax.scale_by_trust_ratio(), scale_by_learning_rate())
