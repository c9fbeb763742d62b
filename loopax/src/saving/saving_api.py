"""The functions of `loopax.saving` / `loopax.models` that take a model
(Keras's `saving_api`): each calls the model's own method."""

from __future__ import annotations

from loopax.src.saving.model_file import load_model

__all__ = ["load_model", "load_weights", "save_model", "save_weights"]


def save_model(model, filepath, overwrite=True, zipped=None, include_optimizer=True):
    """`model.save(filepath)`."""
    model.save(filepath, overwrite=overwrite, zipped=zipped, include_optimizer=include_optimizer)


def save_weights(model, filepath, overwrite=True):
    """`model.save_weights(filepath)`."""
    model.save_weights(filepath, overwrite=overwrite)


def load_weights(model, filepath, skip_mismatch=False):
    """`model.load_weights(filepath)`."""
    model.load_weights(filepath, skip_mismatch=skip_mismatch)
