"""The training state a `model.save(..., include_optimizer=True)` archive adds.

`training_state.safetensors` (safetensors: arrays only, never code) holds

    optimizer/0000, optimizer/0001, ...   `model.optimizer.variables` in order
                                          (iterations, learning rate, slots)
    seed/<structural key>                 each layer's SeedGenerator state
                                          (`dropout/seed_generator/seed_generator_state`)

so `load_model` (with `compile=True`) followed by `fit()` draws the same
Dropout masks and takes the same optimizer steps as the saved model would
have. The optimizer variables are matched by position and checked by shape
and dtype, as Keras matches them; the optimizer comes from the compile
config in `config.json`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from loopax.src import dtypes
from loopax.src.saving import weights_file

if TYPE_CHECKING:
    from loopax.src.models.model import Model

ENTRY = "training_state.safetensors"


def _seed_states(model):
    states = [v for v in model.non_trainable_variables if getattr(v, "is_seed_state", False)]
    return dict(zip(weights_file.variable_keys(model, states), states))


def _optimizer_variables(model):
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not getattr(optimizer, "built", False):
        return []
    return list(optimizer.variables)


def state_arrays(model: Model) -> dict[str, np.ndarray]:
    """`{key: array}` of the optimizer variables and seed states (keyed as above)."""
    arrays = {f"optimizer/{i:04d}": np.asarray(v.value)
              for i, v in enumerate(_optimizer_variables(model))}
    arrays.update({f"seed/{key}": np.asarray(v.value)
                   for key, v in _seed_states(model).items()})
    return arrays


def layout(model: Model) -> weights_file.SafetensorsLayout | None:
    """The archive entry, to stream, or None when there is nothing to save."""
    arrays = state_arrays(model)
    if not arrays:
        return None
    return weights_file.SafetensorsLayout(
        arrays, {"format": "loopax.training_state", "version": "1"})


def restore(model: Model, data: bytes, where: str, compiled: bool) -> None:
    """Assigns the saved seed states, and the optimizer's variables when the
    model was compiled from the file (building the optimizer first)."""
    restore_arrays(model, weights_file.read_safetensors(data, f"{where} ({ENTRY})"), where,
                   compiled)


def restore_arrays(model: Model, arrays: dict, where: str, compiled: bool) -> None:
    """`restore` from `{key: array}` (keyed as `state_arrays`)."""
    seeds = _seed_states(model)
    for key, array in arrays.items():
        if key.startswith("seed/") and key[5:] in seeds:
            _assign(seeds[key[5:]], array, key, where)
    saved = sorted(k for k in arrays if k.startswith("optimizer/"))
    if not compiled or not saved:
        return
    optimizer = model.optimizer
    assert optimizer is not None, "compiled models have an optimizer"
    if not getattr(optimizer, "built", False):
        optimizer.build(model.trainable_variables)
    variables = list(optimizer.variables)
    if len(variables) != len(saved):
        raise ValueError(
            f"{where}: the file holds {len(saved)} optimizer variables but the optimizer "
            f"compiled from its config has {len(variables)}; the file is inconsistent. Load "
            "it with compile=False and compile the model yourself.")
    for variable, key in zip(variables, saved):
        _assign(variable, arrays[key], key, where)


def _assign(variable, array, key, where):
    if tuple(array.shape) != tuple(variable.shape) or np.dtype(array.dtype) != np.dtype(
            variable.dtype):
        raise ValueError(f"{where}: {key} has shape {tuple(array.shape)} and dtype "
                         f"{array.dtype}, but {variable.path} is {variable.shape} "
                         f"{variable.dtype}; the file does not belong to this model.")
    variable.assign(dtypes.asarray(array))
