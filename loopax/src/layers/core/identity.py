"""`Identity`: returns its inputs unchanged."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.tensor import unwrap


@export("loopax.layers.Identity")
class Identity(Layer):
    """Returns its input unchanged (a placeholder, e.g. an optional block turned off).

    Args:
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    row_wise = True

    supports_masking = True   # passes its input's mask on

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built = True

    def call(self, inputs):
        return unwrap(inputs)
