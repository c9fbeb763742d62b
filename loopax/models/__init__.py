"""Models: `Model`, `Sequential`, `Functional`, and loading/cloning them."""

from loopax.src.models.functional import Functional
from loopax.src.models.model import Model
from loopax.src.models.sequential import Sequential
from loopax.src.saving.model_file import load_model
from loopax.src.saving.serialization import deserialize as _deserialize
from loopax.src.saving.serialization import serialize as _serialize


def save_model(model, filepath, overwrite=True, **kwargs):
    """`model.save(filepath)`."""
    model.save(filepath, overwrite=overwrite, **kwargs)


def model_from_config(config, custom_objects=None):
    """A new model from `{"class_name": ..., "config": ...}` (fresh weights)."""
    return _deserialize(config, custom_objects=custom_objects)


def clone_model(model, custom_objects=None):
    """A new model with the same architecture as `model` and fresh weights."""
    return _deserialize(_serialize(model), custom_objects=custom_objects)
