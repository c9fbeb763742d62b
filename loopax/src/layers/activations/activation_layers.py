"""Activation layers with arguments: ReLU, LeakyReLU, PReLU, ELU, Softmax.

(`Activation("relu")` covers the plain activation functions.) Each maps an
input of any shape to an output of the same shape.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src import activations, constraints, initializers, regularizers
from loopax.src.api_export import export
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.symbolic import closed_form_output_shape, same_output_shape
from loopax.src.tensor import unwrap


def _non_negative(value, name, owner, allow_none=False):
    if allow_none and value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    raise ValueError(f"{owner}: `{name}` must be a non-negative number"
                     f"{' or None' if allow_none else ''}, got {value!r}.")


@export("loopax.layers.ReLU")
@closed_form_output_shape
class ReLU(Layer):
    """`x` above `threshold` (capped at `max_value`), `negative_slope · (x - threshold)` below.

    Args:
        max_value: The cap, a number >= 0, or None (the default) for none.
        negative_slope: The slope below `threshold`, >= 0 (default 0).
        threshold: Where the slope changes (default 0).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `max_value` or `negative_slope` is negative, or `threshold` is not
            a number.
    """

    row_wise = True

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value = _non_negative(max_value, "max_value", "ReLU", allow_none=True)
        self.negative_slope = _non_negative(negative_slope, "negative_slope", "ReLU")
        if not isinstance(threshold, (int, float)) or isinstance(threshold, bool):
            raise ValueError(f"ReLU: `threshold` must be a number, got {threshold!r}.")
        self.threshold = float(threshold)
        self.built = True

    def call(self, inputs):
        return activations.relu(unwrap(inputs), negative_slope=self.negative_slope,
                                max_value=self.max_value, threshold=self.threshold)

    compute_output_shape = same_output_shape

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


@export("loopax.layers.LeakyReLU")
@closed_form_output_shape
class LeakyReLU(Layer):
    """`x` for x >= 0, `negative_slope · x` below.

    Args:
        negative_slope: The slope for x < 0, >= 0 (default 0.3; Keras 2's `alpha=` is
            accepted too).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `negative_slope` is negative or not a number.
    """

    row_wise = True

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:  # the Keras 2 name
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        self.negative_slope = _non_negative(negative_slope, "negative_slope", "LeakyReLU")
        self.built = True

    def call(self, inputs):
        return jax.nn.leaky_relu(unwrap(inputs), self.negative_slope)

    compute_output_shape = same_output_shape

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


@export("loopax.layers.PReLU")
class PReLU(Layer):
    """Leaky ReLU with a learned slope: `max(x, 0) - alpha · max(-x, 0)`.

    `alpha` has the input's shape without the batch axis, with size 1 on the
    `shared_axes` (1-based, e.g. `shared_axes=[1, 2]` shares one slope per
    channel across an image).

    Args:
        alpha_initializer: Initializer of `alpha` (default `"zeros"`: starts as ReLU).
        alpha_regularizer: Regularizer of `alpha`, or None.
        alpha_constraint: Constraint on `alpha`, or None.
        shared_axes: An axis or list of axes (1-based, not the batch) that share one
            slope, or None (the default: one slope per entry).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: (at build) `shared_axes` holds an axis outside 1..rank-1, or a
            non-shared axis of the input is unknown.
    """

    row_wise = True

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None,
                 alpha_constraint=None, shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is not None and not isinstance(shared_axes, (list, tuple)):
            shared_axes = [shared_axes]
        self.shared_axes = None if shared_axes is None else list(shared_axes)

    def build(self, input_shape):
        rank = len(input_shape)
        shared = self.shared_axes or []
        bad = [a for a in shared if not isinstance(a, int) or not 1 <= a < rank]
        if bad:
            raise ValueError(f"PReLU {self.name!r}: `shared_axes` {self.shared_axes} must be "
                             f"axes 1..{rank - 1} of the input (shape {tuple(input_shape)}).")
        param_shape = tuple(1 if axis in shared else input_shape[axis]
                            for axis in range(1, rank))
        if None in param_shape:
            raise ValueError(f"PReLU {self.name!r}: every non-shared axis must be known; got "
                             f"input shape {tuple(input_shape)}. Share the unknown axes "
                             "with `shared_axes`.")
        self.alpha = self.add_weight(param_shape, self.alpha_initializer, name="alpha",
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        self.input_spec = InputSpec(ndim=rank, axes={a: input_shape[a] for a in range(1, rank)
                                                     if a not in shared})
        self.built = True

    def call(self, inputs):
        x = unwrap(inputs)
        return jax.nn.relu(x) - self.alpha.value * jax.nn.relu(-x)

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}


@export("loopax.layers.ELU")
@closed_form_output_shape
class ELU(Layer):
    """`x` for x > 0, `alpha · (exp(x) - 1)` below.

    Args:
        alpha: The scale of the negative part (default 1.0).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    row_wise = True

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)
        self.built = True

    def call(self, inputs):
        return jax.nn.elu(unwrap(inputs), self.alpha)

    compute_output_shape = same_output_shape

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


@export("loopax.layers.Softmax")
@closed_form_output_shape
class Softmax(Layer):
    """Softmax over `axis` (an int or a tuple of axes).

    `mask` (broadcastable to the input; True or > 0.5 = keep) gives the
    masked entries a huge negative logit, so they get ~0 probability.

    Args:
        axis: The axis (or tuple of axes) normalized over (default -1).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: (when called) `mask` does not broadcast to the input's shape.
    """

    row_wise = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
        self.built = True

    def call(self, inputs, mask=None):
        x = unwrap(inputs)
        if mask is not None:
            mask = unwrap(mask)
            try:
                jnp.broadcast_shapes(mask.shape, x.shape)
                ok = mask.ndim <= x.ndim
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"Softmax {self.name!r}: `mask` of shape {tuple(mask.shape)} "
                                 f"must broadcast to the input's shape {tuple(x.shape)}.")
            keep = mask if mask.dtype == jnp.bool_ else mask > 0.5
            low = -3e4 if x.dtype == jnp.float16 else -1e9  # Keras' values
            x = jnp.where(keep, x, jnp.asarray(low, x.dtype))
        return jax.nn.softmax(x, axis=self.axis)

    compute_output_shape = same_output_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
