"""`ActivityRegularization`: adds an L1/L2 penalty on its inputs to the losses."""

from __future__ import annotations

from loopax.src import regularizers
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.tensor import unwrap


@export("loopax.layers.ActivityRegularization")
class ActivityRegularization(Layer):
    """Returns its input and adds `l1 · sum|x| + l2 · sum x²` to `losses`.

    Output shape = input shape.

    Args:
        l1: The L1 factor (default 0).
        l2: The L2 factor (default 0).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    supports_masking = True   # passes its input's mask on

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = l1, l2
        self.built = True

    def call(self, inputs):
        return unwrap(inputs)

    def get_config(self):
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}
