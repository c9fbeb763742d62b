"""New models from a model's architecture: `clone_model`, `model_from_config`,
`model_from_json`."""

from __future__ import annotations

import json

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.saving import model_file


@export("loopax.models.model_from_config")
def model_from_config(config, custom_objects=None):
    """A new model from `{"class_name": ..., "config": ...}` (fresh weights).

    Args:
        config: A dict from `loopax.saving.serialize(model)` (or `model.get_config()`
            wrapped with its class name).
        custom_objects: `{name: class}` for custom layers and models.

    Returns:
        The new model.

    Raises:
        ValueError: `config` is malformed or names an unknown class.
    """
    return serialization.deserialize(config, custom_objects=custom_objects)


@export("loopax.models.clone_model")
def clone_model(model, custom_objects=None):
    """A new model with the same architecture as `model` and fresh weights.

    Args:
        model: The model to copy (Sequential, functional or a serializable subclass).
        custom_objects: `{name: class}` for custom layers not registered with
            `loopax.saving.register_serializable`.

    Returns:
        The new model; its weights are newly initialized, not copied.
    """
    return serialization.deserialize(serialization.serialize(model),
                                     custom_objects=custom_objects)


@export("loopax.models.model_from_json")
def model_from_json(json_string, custom_objects=None):
    """A new model (fresh weights) from `model.to_json()`'s string, compiled
    if it was; Keras 3's `to_json()` output is read too. As with `load_model`,
    only loopax's classes, `custom_objects` and registered ones are built.

    Args:
        json_string: The string `model.to_json()` returned.
        custom_objects: `{name: class}` for custom layers and models.

    Returns:
        The new model.

    Raises:
        ValueError: the string is not JSON or does not describe a model.
    """
    try:
        config = json.loads(json_string)
    except (TypeError, json.JSONDecodeError) as e:
        raise ValueError(f"model_from_json() needs the JSON string model.to_json() "
                         f"returned; could not parse it ({e}).") from None
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("model_from_json(): the JSON does not describe a model (no "
                         f"'class_name'): {json_string!r:.120}")
    return model_file.model_from_config_dict(config, custom_objects)
