"""`loopax.layers.serialize` / `deserialize`: a layer <-> its config dict.

Keras's functions of the same names: `serialize(layer)` is
`{"class_name", "config"[, "registered_name", "build_config"]}`, and
`deserialize` re-creates a layer (or model) from it, or from the same dict
written by Keras (with its "module" keys: translated as `load_model` reads
Keras files). Only loopax's layers, `custom_objects` and registered classes
are built (see `loopax.src.serialization`).
"""

from __future__ import annotations

from typing import Any

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.saving import keras_format


@export("loopax.layers.serialize")
def serialize(layer: Any) -> Any:
    """The config dict of `layer` (a Layer or Model).

    Args:
        layer: The layer (or model) to describe; a name, a dict or None passes
            through unchanged (as in Keras, whose serializers return plain values).

    Returns:
        `{"class_name": ..., "config": ...}`, JSON-serializable; `deserialize` rebuilds
        the layer from it (without its weights).

    Raises:
        TypeError: `layer` is neither a Layer nor a plain value.
    """
    if layer is None or isinstance(layer, (str, dict)):
        return layer
    if not isinstance(layer, Layer):
        raise TypeError(f"loopax.layers.serialize() takes a layer; got "
                        f"{type(layer).__name__}. Use loopax.saving.serialize_keras_object "
                        "for other objects.")
    return serialization.serialize(layer)


@export("loopax.layers.deserialize")
def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """The layer a `serialize()` dict describes (fresh weights).

    Args:
        config: A dict from `serialize()` (or from Keras, with a `"module"` key), or a
            layer, returned as it is (as loopax's other `deserialize` functions do).
        custom_objects: `{name: class}` for custom layers not registered with
            `loopax.saving.register_keras_serializable`.

    Returns:
        A new, unbuilt layer (or the layer given).

    Raises:
        ValueError: `config` is not such a dict, or it describes something that is not
            a layer.
    """
    if isinstance(config, Layer):
        return config
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("loopax.layers.deserialize() takes the dict layers.serialize() "
                         f"returns ({{'class_name': ..., 'config': ...}}); got {config!r:.120}")
    if "module" in config:   # written by Keras
        config = keras_format.translate_config(config, custom_objects, where="the config")
    layer = serialization.deserialize(config, custom_objects=custom_objects)
    if not isinstance(layer, Layer):
        raise ValueError(f"loopax.layers.deserialize(): {config['class_name']!r} is not a "
                         f"layer (it is {type(layer).__name__}).")
    return layer
