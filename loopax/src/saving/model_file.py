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
import tempfile
import warnings
import zipfile

from loopax.src.saving import keras_format, serialization, training_state, weights_file
from loopax.src.version import __version__

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS = weights_file.WEIGHTS_IN_ARCHIVE
# Files a layer's `save_assets(dir)` wrote: "assets/<layer key prefix>__files__/<path>".
ASSETS = "assets/"
_FILES = "__files__/"


def model_config(model) -> dict:
    """`serialize(model)` with its build and compile configs: what
    `model.save` writes as config.json and `model.to_json()` returns."""
    config = serialization.serialize(model)
    if "build_config" not in config:
        build_shape = getattr(model, "_build_input_shape", None)
        if build_shape is not None:
            config["build_config"] = {"input_shape": _jsonable_shape(build_shape)}
    compile_config = _compile_config(model)
    if compile_config is not None:
        config["compile_config"] = compile_config
    return config


def config_to_json(model, config, **kwargs) -> str:
    """`json.dumps(config)`, or an error naming what is not JSON."""
    try:
        return json.dumps(config, **kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"Cannot save model {model.name!r}: its config is not JSON ({e}). A layer's "
            "get_config() must return plain values (numbers, strings, lists, dicts); a "
            "custom function (activation, loss...) must be registered with "
            "@loopax.saving.register_serializable() to be saved by name.") from e


def model_from_config_dict(config, custom_objects=None, compile=True, keras_configs=True):
    """The model a `model_config()` dict (or, with `keras_configs`, a Keras 3
    model config, with its "module" keys) describes; built and compiled as
    saved, without weights."""
    if keras_configs and isinstance(config, dict) and "module" in config:   # by Keras
        config = keras_format.translate_config(config, custom_objects, where="the config")
    else:
        config = dict(config)
    build_shape = config.pop("build_input_shape", None)   # files of loopax <= 0.x
    compile_config = config.pop("compile_config", None)
    model = serialization.deserialize(config, custom_objects=custom_objects)
    if not model.built and build_shape is not None:
        model.build(_shape_from_json(build_shape))
    if compile and compile_config is not None:
        _restore_compile(model, compile_config, custom_objects)
    return model


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    filepath = os.fspath(filepath)
    weights_file._check_writable(filepath, overwrite)
    config_text = config_to_json(model, model_config(model), indent=1)
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
        _save_assets(model, zf)


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

    Returns:
        The model, built, with the saved weights (compiled when `compile` and the file
        has a compile config).

    Raises:
        FileNotFoundError: no file at `filepath`.
        ValueError: the file is not a loopax (or Keras) model archive.
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
        assets = {name: zf.read(name) for name in names
                  if name.startswith(ASSETS) and not name.endswith("/")}
    model = model_from_config_dict(config, custom_objects, compile=False,
                                   keras_configs=False)
    compile_config = config.get("compile_config")
    arrays = weights_file.read_safetensors(weights_data, filepath)
    weights_file.assign_weights(model, arrays, filepath)
    _load_assets(model, assets, filepath)
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


def _save_assets(model, zf):
    """Calls `save_assets(dir)` of every layer that has one and archives the
    files it wrote (Keras's hook: vocabularies, lookup tables...)."""
    for prefix, layer in weights_file.layer_tree(model):
        if not callable(getattr(layer, "save_assets", None)):
            continue
        with tempfile.TemporaryDirectory() as directory:
            layer.save_assets(directory)
            for root, _, files in os.walk(directory):
                for file in sorted(files):
                    path = os.path.join(root, file)
                    relative = os.path.relpath(path, directory).replace(os.sep, "/")
                    zf.write(path, f"{ASSETS}{prefix}{_FILES}{relative}")


def _load_assets(model, assets, filepath):
    """Gives each layer with `load_assets(dir)` a directory holding the files
    its `save_assets` wrote; entry names are checked to stay inside it."""
    if not assets:
        return
    for prefix, layer in weights_file.layer_tree(model):
        if not callable(getattr(layer, "load_assets", None)):
            continue
        start = f"{ASSETS}{prefix}{_FILES}"
        mine = {name[len(start):]: data for name, data in assets.items()
                if name.startswith(start)}
        with tempfile.TemporaryDirectory() as directory:
            for relative, data in mine.items():
                parts = relative.split("/")
                if relative.startswith("/") or "\\" in relative or ":" in relative or \
                        ".." in parts or "" in parts:
                    raise ValueError(f"{filepath}: asset entry {start + relative!r} points "
                                     "outside its folder; refusing to read the file.")
                path = os.path.join(directory, *parts)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(data)
            layer.load_assets(directory)
