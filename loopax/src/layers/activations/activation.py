"""`Activation`: applies an activation function by name or callable."""

from __future__ import annotations

from loopax.src import activations
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.layers.symbolic import closed_form_output_shape, same_output_shape
from loopax.src.tensor import unwrap


@export("loopax.layers.Activation")
@closed_form_output_shape
class Activation(Layer):
    """Applies an activation function (a name or a callable).

    Output shape = input shape.

    Args:
        activation: An activation name (`"relu"`) or a callable `f(x) -> y`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    row_wise = True

    supports_masking = True   # passes its input's mask on

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.built = True  # no weights

    def call(self, inputs):
        return self.activation(unwrap(inputs))

    compute_output_shape = same_output_shape

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}
