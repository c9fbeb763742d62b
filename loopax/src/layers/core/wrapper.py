"""`Wrapper`: the base class of layers that wrap one other layer
(`TimeDistributed`, `SpectralNormalization`), as Keras's."""

from __future__ import annotations

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.naming import name_scope


@export("loopax.layers.Wrapper")
class Wrapper(Layer):
    """Base class of a layer that wraps another layer and adds behaviour
    around its call. Not a layer to use by itself: subclass it and
    define `call` (and `build` where the wrapped layer's input shape differs).

    The wrapped layer is `self.layer`; its weights are the wrapper's. The
    config holds the wrapped layer's serialized config under `"layer"`.

    Args:
        layer: the layer to wrap (a loopax Layer).
        **kwargs: the base Layer arguments (name, dtype, trainable, ...).

    Raises:
        ValueError: `layer` is not a loopax Layer.
    """

    def __init__(self, layer: Layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"{type(self).__name__}: `layer` must be a loopax Layer; got "
                             f"{layer!r:.80}.")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape=None):
        """Builds the wrapped layer on `input_shape` (if not built yet)."""
        if not self.layer.built:
            with name_scope(self.name, caller=self):   # paths as Keras: wrapper/layer/kernel
                self.layer.build(input_shape)
            self.layer.built = True
        self.built = True

    def get_config(self) -> dict:
        return {**super().get_config(), "layer": serialization.serialize(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer = serialization.deserialize(config.pop("layer"), custom_objects)
        return cls(layer, **config)
