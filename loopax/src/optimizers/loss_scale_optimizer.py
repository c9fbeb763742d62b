"""`LossScaleOptimizer`: dynamic loss scaling for float16 training (Keras's).

float16 gradients underflow to zero for small values; multiplying the loss
by a large scale `S` (`scale_loss`) lifts them into range, and the gradients
are divided by `S` before the inner optimizer sees them. The scale adapts:

- a step whose gradients are all finite: unscale, apply the inner
  optimizer; after `dynamic_growth_steps` such steps in a row, `S *= 2`;
- a step with an inf or NaN gradient (the scale overflowed float16): skip
  it (no weight, slot or `iterations` change), `S /= 2`, restart the count.

State: `variables` is `[step_counter, dynamic_scale, *inner.variables]`, so
the fused `fit()` steps and `stateless_apply` carry the scale like any
other optimizer state. The choice between the two branches is a `lax.cond`:
a skipped step runs no inner update.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.naming import name_scope
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.optimizers.registry import OPTIMIZERS, register_optimizer
from loopax.src.optimizers.state_cond import assign_cond
from loopax.src.state import Variable

_UNSUPPORTED = dict(weight_decay=None, clipnorm=None, global_clipnorm=None, clipvalue=None,
                    use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                    loss_scale_factor=None, gradient_accumulation_steps=None)


@export("loopax.mixed_precision.LossScaleOptimizer", "loopax.optimizers.LossScaleOptimizer")
@register_optimizer(wrapper=True)
class LossScaleOptimizer(Optimizer):
    """Wraps `inner_optimizer` with dynamic loss scaling.

    Args:
        inner_optimizer: the Optimizer doing the updates (its
            `loss_scale_factor` is cleared: the scale is this one's).
        initial_scale: the starting loss scale (2**15).
        dynamic_growth_steps: finite steps in a row before the scale doubles.
        name: prefix of the two scale variables' paths.

    `compile()` wraps the optimizer in one automatically when the model's
    dtype policy is "mixed_float16" (`auto_scale_loss=True`). In a custom
    loop, differentiate `optimizer.scale_loss(loss)` and pass the (scaled)
    gradients to `apply` / `stateless_apply`.
    """

    # The base class's own iteration counter is unused: the inner optimizer counts.
    _untracked_attributes = Optimizer._untracked_attributes | {"_iterations"}

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000,
                 name=None, **kwargs):
        if not kwargs.pop("dynamic", True):
            raise ValueError(
                "LossScaleOptimizer: `dynamic=False` is not supported; set "
                "`loss_scale_factor` on the inner optimizer for a fixed scale.")
        for key, default in _UNSUPPORTED.items():
            if key in kwargs and kwargs.pop(key) != default:
                raise ValueError(f"LossScaleOptimizer does not take `{key}`; set it on "
                                 "the inner optimizer.")
        if kwargs:
            raise ValueError(f"LossScaleOptimizer: unknown argument(s) {sorted(kwargs)}.")
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(
                "LossScaleOptimizer: `inner_optimizer` must be a loopax Optimizer, got "
                f"{type(inner_optimizer).__name__}.")
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise ValueError("LossScaleOptimizer: the inner optimizer already scales "
                             "the loss; do not wrap it twice.")
        if not (isinstance(dynamic_growth_steps, int) and dynamic_growth_steps >= 1):
            raise ValueError("LossScaleOptimizer: `dynamic_growth_steps` must be an int "
                             f">= 1, got {dynamic_growth_steps!r}.")
        if not float(initial_scale) > 0:
            raise ValueError("LossScaleOptimizer: `initial_scale` must be > 0, got "
                             f"{initial_scale!r}.")
        super().__init__(learning_rate=None, name=name or "loss_scale_optimizer")
        self._variables = []          # no iterations of its own: the inner's count
        self.inner_optimizer = inner_optimizer
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = dynamic_growth_steps
        inner_optimizer.loss_scale_factor = None

    # ---- state ----------------------------------------------------------------
    def build(self, var_list: Sequence[Any]) -> None:
        if self.built:
            return
        self.inner_optimizer.build(var_list)
        with name_scope(self.name, caller=self):
            self.step_counter = Variable(0, dtype="int32", trainable=False,
                                         name="step_counter")
            self.dynamic_scale = Variable(self.initial_scale, dtype="float32",
                                          trainable=False, name="dynamic_scale")
        self._own = [self.step_counter, self.dynamic_scale]
        self._variables = self._own + list(self.inner_optimizer._variables)
        self._trainable_variables = self.inner_optimizer._trainable_variables
        self._index_by_id = self.inner_optimizer._index_by_id
        self._compiled.clear()
        self.built = True

    @property
    def iterations(self) -> Variable | jax.Array:
        """The inner optimizer's count of applied (not skipped) updates."""
        return self.inner_optimizer.iterations

    @property
    def learning_rate(self) -> Any:
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if value is None:      # the base class's constructor: no rate of its own
            return
        self.inner_optimizer.learning_rate = value

    @property
    def use_ema(self) -> bool:
        return self.inner_optimizer.use_ema

    @use_ema.setter
    def use_ema(self, value: bool) -> None:
        pass   # the base class's constructor sets it; the inner optimizer's counts

    # ---- the update -------------------------------------------------------------
    def scale_loss(self, loss: Any) -> Any:
        """`loss * scale` (the current dynamic scale; scope-aware)."""
        scale = self.dynamic_scale.value if self.built else self.initial_scale
        return loss * jnp.asarray(scale, jnp.asarray(loss).dtype)

    def _update(self, grads, variables):
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(g)) for g in grads]))
        touched = list(self._trainable_variables) + list(self._variables)
        counter, scale = self.step_counter, self.dynamic_scale
        growth = self.dynamic_growth_steps

        def apply_finite():
            s = scale.value
            self.inner_optimizer._update(
                [g / s.astype(g.dtype) if jnp.issubdtype(g.dtype, jnp.floating) else g
                 for g in grads], variables)
            grow = counter.value == growth - 1
            counter.assign(jnp.where(grow, 0, counter.value + 1))
            scale.assign(jnp.where(grow, s * 2.0, s))

        def skip():
            counter.assign(jnp.zeros((), jnp.int32))
            scale.assign(scale.value * 0.5)

        assign_cond(finite, apply_finite, skip, touched)

    def finalize_variable_values(self, var_list: Sequence[Any]) -> None:
        self.inner_optimizer.finalize_variable_values(var_list)

    # ---- config -------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        return {"name": self.name,
                "inner_optimizer": OPTIMIZERS.serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config: dict[str, Any],
                    custom_objects: dict[str, Any] | None = None) -> Any:
        config = dict(config)
        inner = config.pop("inner_optimizer")
        if not isinstance(inner, Optimizer):
            inner = OPTIMIZERS.deserialize(inner, custom_objects)
        return cls(inner, **config)

    def __repr__(self):
        return (f"<LossScaleOptimizer name={self.name} inner={self.inner_optimizer!r} "
                f"built={self.built}>")
