"""New models from a model's architecture: `clone_model`, `model_from_config`."""

from __future__ import annotations

from loopax.src.saving import serialization


def model_from_config(config, custom_objects=None):
    """A new model from `{"class_name": ..., "config": ...}` (fresh weights)."""
    return serialization.deserialize(config, custom_objects=custom_objects)


def clone_model(model, custom_objects=None):
    """A new model with the same architecture as `model` and fresh weights."""
    return serialization.deserialize(serialization.serialize(model),
                                     custom_objects=custom_objects)
