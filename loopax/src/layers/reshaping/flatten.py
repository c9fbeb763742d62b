"""`Flatten`: every axis but the batch's into one."""

from __future__ import annotations

import math

import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.argument_checks import standardize_data_format
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.symbolic import closed_form_output_shape
from loopax.src.tensor import unwrap


@export("loopax.layers.Flatten")
@closed_form_output_shape
class Flatten(Layer):
    """`(batch, d1, d2, ...)` -> `(batch, d1 · d2 · ...)`.

    With `data_format="channels_first"` the channel axis is moved last first,
    so the order matches a channels-last model.

    Input shape: `(batch, d1, d2, ...)`; a rank-1 input `(batch,)` becomes `(batch, 1)`.
    Output shape: `(batch, d1 · d2 · ...)`.

    Args:
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    row_wise = True

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)
        self.built = True

    def call(self, inputs):
        x = unwrap(inputs)
        if self.data_format == "channels_first" and x.ndim > 2:
            x = jnp.moveaxis(x, 1, -1)
        return x.reshape(x.shape[0], -1)

    def compute_output_shape(self, input_shape):
        """`(batch, d1, d2, ...)` -> `(batch, d1 · d2 · ...)` (None if a size is
        unknown); `(batch,)` -> `(batch, 1)`."""
        rest = tuple(input_shape)[1:]
        size = None if None in rest else math.prod(rest)
        return (input_shape[0], size)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}
