"""`Pipeline`: a chain of (preprocessing) layers applied as one layer, as Keras's."""

from __future__ import annotations

from typing import Sequence

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.layers.masking import masks_of


@export("loopax.layers.Pipeline")
class Pipeline(Layer):
    """Applies `layers` one after the other, e.g. an augmentation chain.

    Unlike a `Sequential` model it is a plain layer: it does not cast its inputs
    (each layer casts its own), and it calls its layers with `training=True`
    unless told otherwise, so random augmentations act when it is called on data
    directly; inside a model, the model's `training` flag is passed on. A mask
    on the inputs is passed to the layers that take one. An empty pipeline is
    the identity.

    Args:
        layers: The loopax layers to apply, in order.
        name: The layer's name (auto-numbered "pipeline" otherwise).

    Raises:
        TypeError: `layers` is not a list or tuple of loopax Layers.
    """

    # Each layer of the chain casts its own inputs (Keras's Pipeline does not convert).
    _convert_input_args = False

    def __init__(self, layers: Sequence[Layer], name: str | None = None):
        if not isinstance(layers, (list, tuple)) or not all(
                isinstance(layer, Layer) for layer in layers):
            raise TypeError(f"Pipeline: `layers` must be a list of loopax layers, got "
                            f"{layers!r:.120}.")
        super().__init__(name=name)
        self._pipeline_layers = list(layers)

    @property
    def layers(self) -> list[Layer]:
        """The layers of the chain, in order."""
        return list(self._pipeline_layers)

    def build(self, input_shape=None):
        """Builds each layer on the output shape of the one before it."""
        shape = input_shape
        for layer in self._pipeline_layers:
            layer.build_from_config({"input_shape": shape})   # nothing if already built
            shape = layer.compute_output_shape(shape)
        self.built = True

    def call(self, inputs, training=True, mask=None):
        outputs = inputs
        for layer in self._pipeline_layers:
            kwargs = {"training": training} if layer._call_takes_training else {}
            if mask is not None and layer._call_takes_mask:
                kwargs["mask"] = mask
            outputs = layer(outputs, **kwargs)
            mask = masks_of(outputs)
        return outputs

    def get_config(self) -> dict:
        return {"name": self.name,
                "layers": [serialization.serialize(layer) for layer in self._pipeline_layers]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        layers = config.get("layers")
        if not isinstance(layers, (list, tuple)):
            raise ValueError(f"Pipeline.from_config: `layers` must be a list of serialized "
                             f"layers, got {layers!r:.120}.")
        layers = [serialization.deserialize(layer, custom_objects) for layer in layers]
        return cls(layers, name=config.get("name"))
