"""`Reshape`: the non-batch axes to a target shape (one -1 inferred)."""

from __future__ import annotations

import math

from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.layers.symbolic import closed_form_output_shape
from loopax.src.tensor import unwrap


@export("loopax.layers.Reshape")
@closed_form_output_shape
class Reshape(Layer):
    """`(batch, ...)` -> `(batch, *target_shape)`; one entry may be -1.

    Args:
        target_shape: The output shape without the batch axis: positive sizes and at
            most one -1 (inferred from the input's size).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `target_shape` is malformed, or (when called) the input's size per
            sample does not fit it.
    """

    row_wise = True

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1 or any(
                d == 0 or d < -1 for d in self.target_shape):
            raise ValueError(f"Reshape: `target_shape` {self.target_shape} may hold positive "
                             "sizes and at most one -1.")
        self.built = True

    def call(self, inputs):
        x = unwrap(inputs)
        return x.reshape((x.shape[0],) + self._resolve(x.shape[1:]))

    def compute_output_shape(self, input_shape):
        """`(batch, ...)` -> `(batch, *target_shape)`, the -1 entry resolved (None
        when the input has an unknown size)."""
        rest = tuple(input_shape)[1:]
        if None in rest:
            return (input_shape[0],) + tuple(None if d == -1 else d for d in self.target_shape)
        return (input_shape[0],) + self._resolve(rest)

    def _resolve(self, input_shape):
        size = math.prod(input_shape)
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape and known and size % known == 0:
            return tuple(size // known if d == -1 else d for d in self.target_shape)
        if -1 not in self.target_shape and known == size:
            return self.target_shape
        raise ValueError(f"Reshape {self.name!r}: cannot reshape input of shape "
                         f"(batch, {', '.join(map(str, input_shape))}) ({size} values per "
                         f"sample) to (batch, {', '.join(map(str, self.target_shape))}).")

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}
