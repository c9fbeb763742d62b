"""`Optax`: any `optax.GradientTransformation` as a loopax optimizer.

    opt = loopax.optimizers.get(optax.adamw(1e-3))      # or Optax(optax.adamw(1e-3))
    model.compile(optimizer=opt, ...)

The transformation's state becomes Variables (`opt.variables`) like any
optimizer's, so `stateless_apply`, `fit()` and checkpoints work unchanged.
The transformation sees the parameters as an `OrderedDict` keyed by variable
path (`"dense_kernel"`), so masks can select by name, e.g.
`mask=lambda p: jax.tree_util.tree_map_with_path(lambda k, _: "bias" not in k[0].key, p)`.

The learning rate, for callbacks such as ReduceLROnPlateau, comes from either

- `learning_rate=` given here: the transformation's output is then scaled by
  `-learning_rate` (pass a `scale_by_*` transformation, e.g.
  `Optax(optax.scale_by_adam(), learning_rate=1e-3)`), or
- a transformation built with `optax.inject_hyperparams`, whose
  `learning_rate` hyperparameter becomes a settable Variable.
"""

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import optax

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.optimizers.optimizer import Optimizer


@export("loopax.optimizers.Optax")
class Optax(Optimizer):
    """Wraps an optax GradientTransformation.

    Args:
        transformation: the optax GradientTransformation.
        learning_rate: optional; when given, updates are scaled by
            `-learning_rate` (see the module doc).
        **kwargs: the base `Optimizer` arguments (clipping, weight_decay, ...).
    """

    def __init__(self, transformation, learning_rate=None, **kwargs):
        if not isinstance(transformation, optax.GradientTransformation):
            raise TypeError(
                "Optax: `transformation` must be an optax.GradientTransformation "
                f"(e.g. optax.adam(1e-3)), got {type(transformation).__name__}.")
        self.transformation = transformation
        super().__init__(learning_rate=learning_rate, **kwargs)

    def _transform(self):
        return self.transformation

    def build(self, var_list: Sequence[Any]) -> None:
        super().build(var_list)
        if self.weight_decay and self._learning_rate is None and self._injected_lr() is None:
            raise ValueError(
                f"{self.name}: `weight_decay` needs a learning rate; pass "
                "`learning_rate=` or build the transformation with "
                "optax.inject_hyperparams, or use optax's own weight decay.")

    def _injected_lr(self):
        """The Variable holding an `inject_hyperparams` learning rate, if any."""
        for path, var in getattr(self, "_slot_by_keypath", {}).items():
            if (path and getattr(path[-1], "key", None) == "learning_rate"
                    and any(getattr(e, "name", None) == "hyperparams" for e in path)):
                return var
        return None

    @property
    def learning_rate(self) -> Any:
        if self._learning_rate is not None:
            return super().learning_rate
        injected = self._injected_lr()
        if injected is None:
            raise AttributeError(
                f"{self.name}: this optax transformation has no learning rate loopax "
                "can read" + ("" if self.built else " (or it is not built yet)") +
                ". Build it with optax.inject_hyperparams(optax.adam)(learning_rate=...)"
                " or pass `learning_rate=` with a scale_by_* transformation.")
        return injected

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if self._learning_rate is None and self._injected_lr() is not None:
            self._injected_lr().assign(value)
        else:
            self._assign_learning_rate(value)

    def _current_learning_rate(self):
        if self._learning_rate is not None:
            return super()._current_learning_rate()
        injected = self._injected_lr()
        return None if injected is None else injected.value

    def _transform_update(self, grads, state, params, learning_rate, step):
        updates, state = self.transformation.update(grads, state, params)
        if self._learning_rate is not None:
            updates = jax.tree.map(lambda u: u * jnp.asarray(-learning_rate, u.dtype), updates)
        return updates, state

    def get_config(self) -> dict[str, Any]:
        # The transformation is code: it cannot be saved as configuration.
        return {**super().get_config(), "transformation": None}

    @classmethod
    def from_config(cls, config: dict[str, Any],
                    custom_objects: dict[str, Any] | None = None) -> Any:
        raise ValueError(
            "An Optax optimizer cannot be re-created from its config: the optax "
            "transformation is code. Create it again with "
            "loopax.optimizers.Optax(transformation) and restore its variables.")


serialization.register_builtins("optimizer", [Optax])   # its config names it
