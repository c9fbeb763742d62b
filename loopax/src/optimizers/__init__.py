"""Optimizers (Keras names) over optax, and `get` / `serialize` / `deserialize`."""

import optax

from loopax.src.optimizers import schedules
from loopax.src.optimizers.adafactor import Adafactor
from loopax.src.optimizers.adam import Adam, Adamax, AdamW, Lamb, Nadam
from loopax.src.optimizers.lion import Lion
from loopax.src.optimizers.optax_optimizer import Optax
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.optimizers.rmsprop import Adadelta, Adagrad, RMSprop
from loopax.src.optimizers.sgd import SGD

ALL_OPTIMIZERS = {cls.__name__: cls for cls in (
    SGD, Adam, AdamW, Adamax, Nadam, RMSprop, Adagrad, Adadelta, Lion, Lamb, Adafactor)}


def serialize(optimizer):
    """`{"class_name": ..., "config": ...}` for an optimizer."""
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config, custom_objects=None):
    """The optimizer a `serialize()` dict (or a bare name) describes."""
    if isinstance(config, str):
        config = {"class_name": config, "config": {}}
    classes = {**ALL_OPTIMIZERS, **(custom_objects or {})}
    by_lower = {name.lower(): cls for name, cls in classes.items()}
    name = config.get("class_name", "")
    cls = classes.get(name) or by_lower.get(name.lower())
    if cls is None:
        raise ValueError(
            f"Unknown optimizer {name!r}. Valid names: {sorted(by_lower)} (or an "
            "Optimizer instance, a config dict, or an optax.GradientTransformation).")
    return cls.from_config(config.get("config", {}), custom_objects) if issubclass(
        cls, Optimizer) else cls(**config.get("config", {}))


def get(identifier):
    """An optimizer from a name ("adam"), a config dict, an optimizer, or an
    `optax.GradientTransformation` (wrapped in `Optax`)."""
    if identifier is None or isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, optax.GradientTransformation):
        return Optax(identifier)
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    raise ValueError(
        f"Could not interpret optimizer {identifier!r}: pass a name such as 'adam', "
        "an Optimizer, a config dict, or an optax.GradientTransformation.")
