"""Weight regularizers: callables `reg(weight) -> scalar penalty`.

Pass one to a layer (`Dense(4, kernel_regularizer="l2")`); the layer adds
the penalty of its current weights to `layer.losses`.
"""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.tensor import unwrap
from loopax.src.utils.registry import Registry, name_table


@export("loopax.regularizers.Regularizer")
class Regularizer:
    """Base class: subclasses implement `__call__(x) -> scalar`."""

    def __call__(self, x):
        return jnp.zeros((), jnp.float32)

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _check_factor(name, value):
    value = float(value)
    if value < 0 or value != value:
        raise ValueError(f"Regularizer factor `{name}` must be a non-negative number, got {value}.")
    return value


@export("loopax.regularizers.L1L2", "loopax.regularizers.l1_l2")
class L1L2(Regularizer):
    """l1 · sum(|x|) + l2 · sum(x²).

    Args:
        l1: The L1 factor (>= 0).
        l2: The L2 factor (>= 0).

    Raises:
        ValueError: a factor is negative or NaN.
    """

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _check_factor("l1", l1)
        self.l2 = _check_factor("l2", l2)

    def __call__(self, x):
        x = unwrap(x)
        penalty = jnp.zeros((), x.dtype)
        if self.l1:
            penalty = penalty + self.l1 * jnp.sum(jnp.abs(x))
        if self.l2:
            penalty = penalty + self.l2 * jnp.sum(jnp.square(x))
        return penalty

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


@export("loopax.regularizers.L1", "loopax.regularizers.l1")
class L1(Regularizer):
    """l1 · sum(|x|).

    Args:
        l1: The factor (>= 0).

    Raises:
        ValueError: the factor is negative or NaN.
    """

    def __init__(self, l1=0.01):
        self.l1 = _check_factor("l1", l1)

    def __call__(self, x):
        return self.l1 * jnp.sum(jnp.abs(unwrap(x)))

    def get_config(self):
        return {"l1": self.l1}


@export("loopax.regularizers.L2", "loopax.regularizers.l2")
class L2(Regularizer):
    """l2 · sum(x²) (no factor 1/2, as in Keras).

    Args:
        l2: The factor (>= 0).

    Raises:
        ValueError: the factor is negative or NaN.
    """

    def __init__(self, l2=0.01):
        self.l2 = _check_factor("l2", l2)

    def __call__(self, x):
        return self.l2 * jnp.sum(jnp.square(unwrap(x)))

    def get_config(self):
        return {"l2": self.l2}


@export("loopax.regularizers.OrthogonalRegularizer", "loopax.regularizers.orthogonal_regularizer")
class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (or columns) of a 2-D weight towards orthonormality:
    factor · mean of |off-diagonal entries| of the Gram matrix of the
    L2-normalized rows (mode="rows") or columns (mode="columns").

    Args:
        factor: The penalty's factor (>= 0).
        mode: `"rows"` or `"columns"`: which vectors should be orthonormal.

    Raises:
        ValueError: a negative factor or an unknown mode; a weight that is not 2-D
            raises when the penalty is computed.
    """

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = _check_factor("factor", factor)
        if mode not in ("rows", "columns"):
            raise ValueError(f"OrthogonalRegularizer: `mode` must be 'rows' or 'columns', "
                             f"got {mode!r}.")
        self.mode = mode

    def __call__(self, x):
        x = unwrap(x)
        if x.ndim != 2:
            raise ValueError(f"OrthogonalRegularizer needs a 2-D weight, got shape {x.shape}.")
        if self.mode == "columns":
            x = x.T
        x = x / jnp.maximum(jnp.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        gram = x @ x.T
        n = gram.shape[0]
        off_diagonal = jnp.abs(gram) * (1.0 - jnp.eye(n, dtype=gram.dtype))
        return self.factor * jnp.sum(off_diagonal) / max(n * (n - 1), 1)

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


_CLASSES = [L1, L2, L1L2, OrthogonalRegularizer]
_REGISTRY = Registry("regularizer", name_table(_CLASSES, {"l1_l2": L1L2}),
                     base=Regularizer, unlisted=[cls.__name__ for cls in _CLASSES])

# Keras' lower-case aliases.
l1, l2, l1_l2, orthogonal_regularizer = L1, L2, L1L2, OrthogonalRegularizer


@export("loopax.regularizers.serialize")
def serialize(regularizer):
    """Serializes regularizer to a Keras-style config dict (`class_name` and `config`).

    Args:
        regularizer: A built-in or registered regularizer.

    Returns:
        A JSON-serializable dict that `deserialize` turns back into it.
    """
    return _REGISTRY.serialize(regularizer)


@export("loopax.regularizers.deserialize")
def deserialize(config, custom_objects=None):
    """The regularizer a Keras-style config dict (or name) describes.

    Args:
        config: A dict with `class_name` (and `config`), or a name.
        custom_objects: `{name: class}` for custom regularizers.

    Returns:
        A new regularizer.

    Raises:
        ValueError: the config has no `class_name` or names an unknown class.
    """
    return _REGISTRY.deserialize(config, custom_objects)


@export("loopax.regularizers.get")
def get(identifier):
    """A regularizer from None, a name ("l1", "l2", "l1_l2"), a config dict
    or a callable.

    Args:
        identifier: None, a name, a config dict, a regularizer or a callable.

    Returns:
        The regularizer (None for None).

    Raises:
        ValueError: `identifier` cannot be interpreted.
    """
    return _REGISTRY.get(identifier)
