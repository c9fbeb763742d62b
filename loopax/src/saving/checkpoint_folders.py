"""The folders `OrbaxCheckpoint` (loopax.src.callbacks) writes: what one checkpoint
holds, and reading one back (`model.load_weights(folder)`,
`loopax.saving.load_model(folder)`). Layout: see the callback's module.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from loopax.src.saving import archive, model_file, training_state, weights_file
from loopax.src.saving.checkpoint import CheckpointStore
from loopax.src.utils import memory_utils

if TYPE_CHECKING:
    from loopax.src.layers.layer import Layer
    from loopax.src.models.model import Model

FORMAT = "loopax.orbax_checkpoint"
_WEIGHTS, _STATE = "weights/", "state/"


def checkpoint_contents(model: Model, weights_only: bool) -> tuple[dict, dict]:
    """`(arrays, meta)` of one checkpoint of `model` (host copies of its state)."""
    arrays = {_WEIGHTS + k: v for k, v in weights_file.weight_arrays(model).items()}
    arrays.update({_STATE + k: v for k, v in training_state.state_arrays(model).items()})
    meta = {"format": FORMAT, "version": 1, "weights_only": bool(weights_only)}
    if not weights_only:
        meta["config"] = model_file.model_config(model)
    return arrays, meta


def _step_of(path):
    """The step `path` names (`<folder>/<step>` holding `meta/`), or None."""
    name = os.path.basename(os.path.normpath(path))
    return int(name) if name.isdigit() and os.path.isdir(os.path.join(path, "meta")) else None


def read_checkpoint(path: str | os.PathLike) -> tuple[dict, dict, str]:
    """`(arrays, meta, where)` of the checkpoint `path` names: the latest step of a
    checkpoint folder, or the step folder itself."""
    path = os.path.abspath(os.fspath(path))
    step = _step_of(path)
    folder = os.path.dirname(path) if step is not None else path
    if step is None and not any(name.isdigit() and os.path.isdir(os.path.join(folder, name))
                                for name in os.listdir(folder)):
        raise ValueError(f"{folder} is a folder without numbered checkpoints: pass a weights "
                         "file, a model file, or a folder OrbaxCheckpoint wrote (or one of its "
                         "<step> folders).")
    store = CheckpointStore(folder)
    try:
        if step is None:
            steps = store.steps()
            if not steps:
                raise ValueError(f"{folder} holds no complete checkpoint.")
            step = steps[-1]
        where = os.path.join(folder, str(step))
        if os.path.isdir(os.path.join(where, "pytree")):
            raise ValueError(f"{where} was written by Keras's OrbaxCheckpoint (orbax's v1 "
                             "layout), which loopax does not read; see "
                             "docs/keras_differences.md.")
        arrays, meta = store.restore(step)
    finally:
        store.close()
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{where} is not a checkpoint written by loopax's OrbaxCheckpoint "
                         "(Keras's OrbaxCheckpoint writes another layout; see "
                         "docs/keras_differences.md).")
    return arrays, meta, where


def load_weights(model: Layer, path: str | os.PathLike, skip_mismatch: bool = False) -> None:
    """`model.load_weights(path)` for a checkpoint folder: the weights, and the
    optimizer state when the model is compiled."""
    arrays, _, where = read_checkpoint(path)
    _assign(model, arrays, where, skip_mismatch)


def load_model(path: str | os.PathLike, custom_objects: dict | None = None, compile: bool = True,
               ) -> Model:
    """`load_model(path)` for a checkpoint folder: the model its config describes,
    with the checkpoint's weights (and optimizer state when `compile`)."""
    arrays, meta, where = read_checkpoint(path)
    if "config" not in meta:
        raise ValueError(f"{where} was saved with save_weights_only=True and holds no model "
                         "config: build the model yourself and call model.load_weights() on it.")
    held = sum(int(v.nbytes) for v in arrays.values())
    with memory_utils.weight_budget(
            held + archive.BUILD_SLACK_BYTES,
            f"the arrays of {where} ({held:,} bytes): its config describes a model larger "
            "than its weights (a damaged or edited checkpoint)"):
        model = model_file.model_from_config_dict(meta["config"], custom_objects,
                                                  compile=compile, keras_configs=False)
    _assign(model, arrays, where)
    return model


def _assign(model, arrays, where, skip_mismatch=False):
    weights = {k[len(_WEIGHTS):]: v for k, v in arrays.items() if k.startswith(_WEIGHTS)}
    wanted = weights_file.check_match(
        model, weights_file.expected_weights(model),
        {k: tuple(v.shape) for k, v in weights.items()}, where, skip_mismatch)
    weights_file.assign_weights(model, {k: weights[k] for k in wanted})
    state = {k[len(_STATE):]: v for k, v in arrays.items() if k.startswith(_STATE)}
    compiled = getattr(model, "optimizer", None) is not None
    training_state.restore_arrays(model, state, where, compiled)
