"""Weight constraints: callables `constraint(w) -> projected w`.

A layer stores one on its Variable (`var.constraint`); optimizers apply it
after each update.
"""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src import dtypes
from loopax.src.api_export import export
from loopax.src.tensor import unwrap
from loopax.src.utils.registry import Registry, name_table

_EPSILON = dtypes.EPSILON


def _norms(w, axis):
    return jnp.sqrt(jnp.sum(jnp.square(w), axis=axis, keepdims=True))


@export("loopax.constraints.Constraint")
class Constraint:
    """Base class: subclasses implement `__call__(w) -> w`."""

    def __call__(self, w):
        return w

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


@export("loopax.constraints.MaxNorm", "loopax.constraints.max_norm")
class MaxNorm(Constraint):
    """Rescales slices along `axis` whose L2 norm exceeds `max_value`.

    For a Dense kernel `(in, out)` the default `axis=0` constrains each
    unit's incoming weight vector.

    Args:
        max_value: The largest allowed norm.
        axis: The axis (or axes) the norms are computed along.
    """

    def __init__(self, max_value=2.0, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        w = unwrap(w)
        norms = _norms(w, self.axis)
        desired = jnp.clip(norms, 0, self.max_value)
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


@export("loopax.constraints.NonNeg", "loopax.constraints.non_neg")
class NonNeg(Constraint):
    """Sets negative entries to zero."""

    def __call__(self, w):
        w = unwrap(w)
        return w * (w >= 0).astype(w.dtype)


@export("loopax.constraints.UnitNorm", "loopax.constraints.unit_norm")
class UnitNorm(Constraint):
    """Rescales slices along `axis` to unit L2 norm.

    Args:
        axis: The axis (or axes) the norms are computed along.
    """

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = unwrap(w)
        return w / (_EPSILON + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


@export("loopax.constraints.MinMaxNorm", "loopax.constraints.min_max_norm")
class MinMaxNorm(Constraint):
    """Moves slice norms into [min_value, max_value]:
    new norm = rate · clip(norm) + (1 - rate) · norm.

    Args:
        min_value: The smallest allowed norm.
        max_value: The largest allowed norm.
        rate: How far towards the clipped norm each application moves (1: all the way).
        axis: The axis (or axes) the norms are computed along.
    """

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        w = unwrap(w)
        norms = _norms(w, self.axis)
        desired = (self.rate * jnp.clip(norms, self.min_value, self.max_value)
                   + (1 - self.rate) * norms)
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value,
                "rate": self.rate, "axis": self.axis}


_CLASSES = [MaxNorm, NonNeg, UnitNorm, MinMaxNorm]
_REGISTRY = Registry("constraint", name_table(_CLASSES), base=Constraint,
                     unlisted=[cls.__name__ for cls in _CLASSES])

# Keras' lower-case aliases.
max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm


@export("loopax.constraints.serialize")
def serialize(constraint):
    """Serializes constraint to a Keras-style config dict (`class_name` and `config`).

    Args:
        constraint: A built-in or registered constraint.

    Returns:
        A JSON-serializable dict that `deserialize` turns back into it.
    """
    return _REGISTRY.serialize(constraint)


@export("loopax.constraints.deserialize")
def deserialize(config, custom_objects=None):
    """The constraint a Keras-style config dict (or name) describes.

    Args:
        config: A dict with `class_name` (and `config`), or a name.
        custom_objects: `{name: class}` for custom constraints.

    Returns:
        A new constraint.

    Raises:
        ValueError: the config has no `class_name` or names an unknown class.
    """
    return _REGISTRY.deserialize(config, custom_objects)


@export("loopax.constraints.get")
def get(identifier):
    """A constraint from None, a name ("max_norm", "non_neg", ...), a config
    dict or a callable.

    Args:
        identifier: None, a name, a config dict, a constraint or a callable.

    Returns:
        The constraint (None for None).

    Raises:
        ValueError: `identifier` cannot be interpreted.
    """
    return _REGISTRY.get(identifier)
