"""`model.save(path)` / `load_model(path)`: architecture and weights in one zip.

The archive holds
    metadata.json                 loopax version, format
    config.json                   {"class_name", "config", ...} of the model
    model.weights.safetensors     the weights, keyed as in `save_weights`
    training_state.safetensors    optimizer variables and SeedGenerator states
                                  (`include_optimizer=True`, the default; see
                                  `training_state.py`)

`config.json` is resolved through `loopax.saving.serialization`: only
loopax's classes, `custom_objects` and registered classes can be named, so
loading a file never runs code from it. Any file name works (`.keras` or
`.loopax` read well).
"""

from __future__ import annotations

import datetime
import json
import os
import warnings
import zipfile

from loopax.src.saving import keras_format, serialization, training_state, weights_file
from loopax.src.version import __version__

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS = weights_file.WEIGHTS_IN_ARCHIVE


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    filepath = os.fspath(filepath)
    weights_file._check_writable(filepath, overwrite)
    config = serialization.serialize(model)
    build_shape = getattr(model, "_build_input_shape", None)
    if build_shape is not None:
        config["build_input_shape"] = _jsonable_shape(build_shape)
    compile_config = _compile_config(model)
    if compile_config is not None:
        config["compile_config"] = compile_config
    try:
        config_text = json.dumps(config, indent=1)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"Cannot save model {model.name!r}: its config is not JSON ({e}). A layer's "
            "get_config() must return plain values (numbers, strings, lists, dicts).") from e
    metadata = {"format": "loopax.model", "version": 1, "loopax_version": __version__,
                "date_saved": datetime.datetime.now().isoformat(timespec="seconds")}
    with weights_file.atomic_write(filepath) as f, \
            zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(METADATA, json.dumps(metadata, indent=1))
        zf.writestr(CONFIG, config_text)
        zf.writestr(WEIGHTS, weights_file.weights_to_bytes(model))
        state = training_state.to_bytes(model) if include_optimizer else None
        if state is not None:
            zf.writestr(training_state.ENTRY, state)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Re-creates a model written by `model.save`, with its weights.

    Args:
        filepath: the file `model.save` wrote.
        custom_objects: `{class_name: class}` for your own layers/models
            (or register them with `@loopax.saving.register_serializable()`).
        compile: re-compile with the saved compile config, when there is one,
            and restore the optimizer's state when the file has it (so
            `fit()` continues where the saved model was).
        safe_mode: accepted for Keras compatibility; loopax never runs code
            from a file, so there is no unsafe mode.
    """
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"No model file at {filepath!r}.")
    if not zipfile.is_zipfile(filepath):
        if weights_file._is_zip(filepath):
            raise ValueError(f"{filepath} is a damaged or truncated zip archive.")
        raise ValueError(f"{filepath} is not a model file written by model.save() (not a "
                         "zip archive). For a weights file use model.load_weights().")
    with zipfile.ZipFile(filepath) as zf:
        names = zf.namelist()
        if WEIGHTS not in names and keras_format.is_keras_archive(names):
            keras_format.check_member_names(names, filepath)
            return keras_format.load_model(zf, filepath, custom_objects, compile)
        if CONFIG not in names or WEIGHTS not in names:
            raise ValueError(f"{filepath} is not a loopax model file: it lacks "
                             f"{CONFIG} or {WEIGHTS}.")
        config = json.loads(zf.read(CONFIG))
        weights_data = zf.read(WEIGHTS)
        state_data = (zf.read(training_state.ENTRY) if training_state.ENTRY in names
                      else None)
    build_shape = config.pop("build_input_shape", None)
    compile_config = config.pop("compile_config", None)
    model = serialization.deserialize(config, custom_objects=custom_objects)
    arrays = weights_file.read_safetensors(weights_data, filepath)
    if not model.built and build_shape is not None:
        model.build(_shape_from_json(build_shape))
    weights_file.assign_weights(model, arrays, filepath)
    compiled = False
    if compile and compile_config is not None:
        compiled = _restore_compile(model, compile_config, custom_objects)
    if state_data is not None:
        training_state.restore(model, state_data, filepath, compiled)
    return model


def _jsonable_shape(shape):
    if isinstance(shape, dict):
        return {"__dict__": {k: _jsonable_shape(v) for k, v in shape.items()}}
    if isinstance(shape, (list, tuple)):
        return [_jsonable_shape(s) for s in shape]
    return None if shape is None else int(shape)


def _shape_from_json(shape):
    if isinstance(shape, dict):
        return {k: _shape_from_json(v) for k, v in shape["__dict__"].items()}
    if isinstance(shape, list):
        if all(d is None or isinstance(d, int) for d in shape):
            return tuple(shape)
        return [_shape_from_json(s) for s in shape]
    return shape


def _compile_config(model):
    get = getattr(model, "get_compile_config", None)
    if get is None:
        return None
    try:
        config = get()
        json.dumps(config)
        return config
    except Exception as e:  # optional: a model that can't describe its compile args
        warnings.warn(f"Model {model.name!r}: its compile() arguments are not saved "
                      f"({e}); compile the loaded model again.", stacklevel=3)
        return None


def _restore_compile(model, compile_config, custom_objects):
    restore = getattr(model, "compile_from_config", None)
    if restore is None:
        return False
    try:
        with serialization.custom_object_scope(custom_objects or {}):
            restore(compile_config)
        return True
    except Exception as e:
        warnings.warn(f"The loaded model {model.name!r} could not be compiled again "
                      f"from its saved compile config ({e}); call compile() yourself.",
                      stacklevel=3)
        return False
