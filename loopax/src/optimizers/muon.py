"""Muon (Jordan et al., 2024) with Keras's AdamW fallback.

A 2-D variable `W` (not an embedding, not excluded) takes the Muon step

    m  = momentum * m + g
    u  = g + momentum * m          (nesterov; else u = m)
    O  = NewtonSchulz5(u)          (an approximate orthogonalisation of u)
    W -= lr * O * sqrt(max(rows, cols)) * rms_rate      (Moonlight's scaling)

and every other variable Keras's Adam step at rate `lr * adam_lr_ratio`.
NewtonSchulz5 works on the wide orientation (`u` transposed when it has more
rows than columns): `X = u / (||u||_F + 1e-7)`, then `ns_steps` times
`X = a X + (b A + c A^2) X`, `A = X X^T`.

Weight decay (decoupled, before the step, as in Keras) uses `weight_decay`
for Muon variables and `adam_weight_decay` for AdamW ones.
"""

import collections
import re
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from loopax.src.api_export import export
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.optimizers.registry import register_optimizer
from loopax.src.state import Variable


class MuonState(NamedTuple):
    momentum: Any  # every variable
    velocity: Any  # only the variables taking the AdamW step


def newton_schulz5(x: jax.Array, steps: int, a: float = 3.4445, b: float = -4.7750,
                   c: float = 2.0315) -> jax.Array:
    """The quintic Newton-Schulz iteration Muon uses to push the singular
    values of the matrix `x` (shape `(..., rows, cols)`) towards 1.

    Args:
        x: a float array with at least 2 dimensions.
        steps: the number of iterations.
        a, b, c: the polynomial's coefficients.

    Returns:
        An array of `x`'s shape and dtype, approximately `U V^T` of `x`'s SVD.
    """
    tall = x.shape[-2] > x.shape[-1]
    if tall:
        x = jnp.swapaxes(x, -1, -2)
    x = x / (jnp.linalg.norm(x, axis=(-2, -1), keepdims=True) + 1e-7)
    for _ in range(steps):
        gram = x @ jnp.swapaxes(x, -1, -2)
        x = a * x + (b * gram + c * gram @ gram) @ x
    return jnp.swapaxes(x, -1, -2) if tall else x


def scale_by_keras_muon(adam_keys: Any, adam_beta_1: float = 0.9, adam_beta_2: float = 0.999,
                        epsilon: float = 1e-7, adam_lr_ratio: float = 1.0,
                        momentum: float = 0.95, nesterov: bool = True, ns_steps: int = 5,
                        coefficients: tuple[float, float, float] = (3.4445, -4.7750, 2.0315),
                        rms_rate: float | None = 0.2) -> optax.GradientTransformation:
    """optax transformation of Keras's Muon step (see the module doc) for an
    `OrderedDict` of parameters; those keyed in `adam_keys` take the Adam
    step. Reads `learning_rate` and `step` from the extra arguments."""

    def init_fn(params):
        velocity = collections.OrderedDict(
            (k, jnp.zeros_like(p)) for k, p in params.items() if k in adam_keys)
        return MuonState(optax.tree.zeros_like(params), velocity)

    def muon_step(g, m, lr):
        m = momentum * m + g
        direction = newton_schulz5(g + momentum * m if nesterov else m, ns_steps,
                                   *coefficients)
        update = lr * direction
        if rms_rate is not None:
            update = update * jnp.sqrt(float(max(update.shape[0], update.shape[1]))) * rms_rate
        return -update.astype(g.dtype), m

    def adam_step(g, m, v, lr, t):
        m = m + (g - m) * (1 - adam_beta_1)
        v = v + (g * g - v) * (1 - adam_beta_2)
        alpha = lr * adam_lr_ratio * jnp.sqrt(1 - adam_beta_2 ** t) / (1 - adam_beta_1 ** t)
        return -(m * alpha.astype(g.dtype) / (jnp.sqrt(v) + epsilon)), m, v

    def update_fn(updates, state, params=None, *, learning_rate, step, **extra):
        del params, extra
        t = jnp.asarray(step, jnp.float32) + 1.0
        new_updates = collections.OrderedDict()
        momenta = collections.OrderedDict()
        velocities = collections.OrderedDict()
        for key, g in updates.items():
            lr = jnp.asarray(learning_rate, g.dtype)
            if key in adam_keys:
                new_updates[key], momenta[key], velocities[key] = adam_step(
                    g, state.momentum[key], state.velocity[key], lr, t)
            else:
                new_updates[key], momenta[key] = muon_step(g, state.momentum[key], lr)
        return new_updates, MuonState(momenta, velocities)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


@export("loopax.optimizers.Muon")
@register_optimizer
class Muon(Optimizer):
    """Muon: momentum orthogonalised by Newton-Schulz for 2-D weights, Keras's
    AdamW for the rest (see the module doc for the equations).

    A variable takes the AdamW step when it is not 2-D, when
    `exclude_embeddings` and "embedding" is in its path (any case), or when
    a pattern of `exclude_layers` matches its path (`re.search`). As Keras
    recommends, pass the output layer's name in `exclude_layers`.

    Args:
        learning_rate: float or schedule (default 0.001).
        adam_beta_1, adam_beta_2: moment decay rates of the AdamW step.
        adam_weight_decay: decoupled weight decay of AdamW variables (None: none).
        epsilon: the AdamW step's epsilon (added to `sqrt(v)`).
        weight_decay: decoupled weight decay of Muon variables (None: none).
        exclude_layers: regular expressions; matching variable paths take AdamW.
        exclude_embeddings: embedding variables take AdamW.
        muon_a, muon_b, muon_c: the Newton-Schulz polynomial's coefficients.
        adam_lr_ratio: the AdamW step's rate is `learning_rate * adam_lr_ratio`.
        momentum: the Muon step's momentum.
        ns_steps: the number of Newton-Schulz iterations.
        nesterov: use Nesterov momentum in the Muon step.
        rms_rate: scales the Muon step by `sqrt(max(rows, cols)) * rms_rate`
            (Liu et al., 2025); None disables the scaling.
        **kwargs: the other base `Optimizer` arguments (clipnorm, use_ema, ...).
    """

    def __init__(self, learning_rate=0.001, adam_beta_1=0.9, adam_beta_2=0.999,
                 adam_weight_decay=0.004, epsilon=1e-7, weight_decay=0.004,
                 exclude_layers=None, exclude_embeddings=True, muon_a=3.4445,
                 muon_b=-4.7750, muon_c=2.0315, adam_lr_ratio=1, momentum=0.95, ns_steps=5,
                 nesterov=True, rms_rate=0.2, **kwargs):
        if not isinstance(ns_steps, int) or isinstance(ns_steps, bool) or ns_steps < 0:
            raise ValueError(f"Muon: `ns_steps` must be an int >= 0, got {ns_steps!r}.")
        if isinstance(exclude_layers, str):
            raise TypeError("Muon: `exclude_layers` must be a list of patterns, got the "
                            f"string {exclude_layers!r}; pass [{exclude_layers!r}].")
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, **kwargs)
        self.adam_beta_1 = adam_beta_1
        self.adam_beta_2 = adam_beta_2
        self.adam_weight_decay = adam_weight_decay
        self.epsilon = epsilon
        self.exclude_layers = list(exclude_layers or [])
        self.exclude_embeddings = exclude_embeddings
        self.muon_a = muon_a
        self.muon_b = muon_b
        self.muon_c = muon_c
        self.adam_lr_ratio = adam_lr_ratio
        self.momentum = momentum
        self.ns_steps = ns_steps
        self.nesterov = nesterov
        self.rms_rate = rms_rate

    def _should_use_adamw(self, variable: Variable) -> bool:
        """Whether `variable` takes the AdamW step (Keras's rule, class doc)."""
        if len(variable.shape) != 2:
            return True
        if self.exclude_embeddings and "embedding" in variable.path.lower():
            return True
        return any(re.search(pattern, variable.path) for pattern in self.exclude_layers)

    def _transform(self):
        adam_keys = frozenset(k for k, v in zip(self._keys, self._trainable_variables)
                              if self._should_use_adamw(v))
        return scale_by_keras_muon(
            adam_keys, self.adam_beta_1, self.adam_beta_2, self.epsilon,
            self.adam_lr_ratio, self.momentum, self.nesterov, self.ns_steps,
            (self.muon_a, self.muon_b, self.muon_c), self.rms_rate)

    def _weight_decay_rate(self, variable):
        """`adam_weight_decay` for the AdamW-stepped variables, `weight_decay` for the rest."""
        if not self._use_weight_decay(variable):
            return None
        return self.adam_weight_decay if self._should_use_adamw(variable) else self.weight_decay

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(),
                "adam_beta_1": self.adam_beta_1, "adam_beta_2": self.adam_beta_2,
                "epsilon": self.epsilon, "exclude_layers": self.exclude_layers,
                "muon_a": self.muon_a, "muon_b": self.muon_b, "muon_c": self.muon_c,
                "adam_lr_ratio": self.adam_lr_ratio, "momentum": self.momentum,
                "ns_steps": self.ns_steps, "nesterov": self.nesterov,
                "exclude_embeddings": self.exclude_embeddings,
                "adam_weight_decay": self.adam_weight_decay, "rms_rate": self.rms_rate}
