"""Optimizers (Keras names) over optax, and `get` / `serialize` / `deserialize`."""

from typing import Any

import optax

from loopax.src.api_export import export
from loopax.src.optimizers import schedules
from loopax.src.optimizers.adafactor import Adafactor
from loopax.src.optimizers.adam import Adam, Adamax, AdamW, Lamb, Nadam
from loopax.src.optimizers.ftrl import Ftrl
from loopax.src.optimizers.lion import Lion
from loopax.src.optimizers.loss_scale_optimizer import LossScaleOptimizer
from loopax.src.optimizers.multi_optimizer import MultiOptimizer, OptimizerMap
from loopax.src.optimizers.muon import Muon
from loopax.src.optimizers.optax_optimizer import Optax
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.optimizers.registry import ALL_OPTIMIZERS  # filled by @register_optimizer
from loopax.src.optimizers.registry import OPTIMIZERS as _REGISTRY
from loopax.src.optimizers.rmsprop import Adadelta, Adagrad, RMSprop
from loopax.src.optimizers.schedule_free import ScheduleFreeAdamW
from loopax.src.optimizers.sgd import SGD


@export("loopax.optimizers.serialize")
def serialize(optimizer: Optimizer) -> dict[str, Any]:
    """`{"class_name": ..., "config": ...}` for an optimizer.

    Args:
        optimizer: An Optimizer.

    Returns:
        A JSON-serializable dict that `deserialize` turns back into an optimizer with
        the same settings (not its state).
    """
    return _REGISTRY.serialize(optimizer)


@export("loopax.optimizers.deserialize")
def deserialize(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Optimizer:
    """The optimizer a `serialize()` dict (or a bare name) describes.

    Args:
        config: A `serialize()` dict, or a name such as "adam".
        custom_objects: `{name: class}` for custom optimizers.

    Returns:
        A new optimizer (fresh state).

    Raises:
        ValueError: the dict has no `class_name`, or it names an unknown class.
    """
    return _REGISTRY.deserialize(config, custom_objects)


@export("loopax.optimizers.get")
def get(identifier: Any) -> Optimizer | None:
    """An optimizer from a name ("adam"), a config dict, an optimizer, or an
    `optax.GradientTransformation` (wrapped in `Optax`).

    Args:
        identifier: None, a name ("adam", "sgd", ...), a config dict, an Optimizer
            (returned as is), or an `optax.GradientTransformation`.

    Returns:
        The optimizer (None for None); a name gives one with default settings.

    Raises:
        ValueError: an unknown name, or something that is neither of these.
    """
    if isinstance(identifier, optax.GradientTransformation):
        return Optax(identifier)
    if identifier is None or isinstance(identifier, (Optimizer, str, dict)):
        return _REGISTRY.get(identifier)
    raise ValueError(
        f"Could not interpret optimizer {identifier!r}: pass a name such as 'adam', "
        "an Optimizer, a config dict, or an optax.GradientTransformation.")
