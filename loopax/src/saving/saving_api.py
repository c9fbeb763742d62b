"""The functions of `loopax.saving` / `loopax.models` that take a model
(Keras's `saving_api`): each calls the model's own method."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from loopax.src.api_export import export
from loopax.src.saving.model_file import load_model

if TYPE_CHECKING:
    from loopax.src.models.model import Model

__all__ = ["load_model", "load_weights", "save_model", "save_weights"]


@export("loopax.models.save_model", "loopax.saving.save_model")
def save_model(model: Model, filepath: str | os.PathLike, overwrite: bool = True,
               zipped: bool | None = None, include_optimizer: bool = True,
               compress: bool = False) -> None:
    """`model.save(filepath)`: architecture, weights and (optionally) optimizer state
    in one zip file.

    Args:
        model: The model to save.
        filepath: The file to write (`.keras`).
        overwrite: False refuses to replace an existing file.
        zipped: Only None/True: loopax writes the zip format.
        include_optimizer: Also save the optimizer's state (default True).
        compress: Deflate the weights (smaller, slower to write; default False:
            stored as they are, as Keras).

    Raises:
        ValueError: `zipped=False`.
    """
    model.save(filepath, overwrite=overwrite, zipped=zipped, include_optimizer=include_optimizer,
               compress=compress)


@export("loopax.saving.save_weights")
def save_weights(model: Model, filepath: str | os.PathLike, overwrite: bool = True) -> None:
    """`model.save_weights(filepath)`: the weights, to a safetensors file.

    Args:
        model: The model whose weights are written.
        filepath: The file to write; its folder is created if needed.
        overwrite: False refuses to replace an existing file.

    Raises:
        FileExistsError: the file exists and `overwrite=False`.
    """
    model.save_weights(filepath, overwrite=overwrite)


@export("loopax.saving.load_weights")
def load_weights(model: Model, filepath: str | os.PathLike, skip_mismatch: bool = False) -> None:
    """`model.load_weights(filepath)`: reads weights into `model`.

    Args:
        model: The model to load into.
        filepath: A `.weights.h5`/safetensors file or a `.keras` archive.
        skip_mismatch: Load the weights that match and warn about the rest, instead of
            raising (default False).

    Raises:
        FileNotFoundError: no file at `filepath`.
        ValueError: the file's weights do not match the model's names or shapes.
    """
    model.load_weights(filepath, skip_mismatch=skip_mismatch)
