"""Saving and loading models, and the registry of serializable objects.

`model.save_weights(path)` / `model.load_weights(path)`: the weights as
safetensors. `model.save(path)` / `load_model(path)`: architecture and weights
in one zip. Keras 3 `.keras` and `.weights.h5` files are read too (needs
h5py; see docs/saving.md). Loading never runs code from a file: classes are
found only among loopax's own, `custom_objects=` and those registered with
`@register_serializable()`.
"""

from loopax.src.saving.file_editor import KerasFileEditor
from loopax.src.saving.saving_api import load_model, load_weights, save_model, save_weights
from loopax.src.serialization import (
    CustomObjectScope,
    custom_object_scope,
    deserialize,
    deserialize_keras_object,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    register_serializable,
    serialize,
    serialize_keras_object,
)

