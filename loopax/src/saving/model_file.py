"""`model.save(path)` / `load_model(path)`: architecture and weights in one zip.

The archive holds
    metadata.json                 loopax version, format
    config.json                   {"class_name", "config", ...} of the model
    model.weights.safetensors     the weights, keyed as in `save_weights`
    training_state.safetensors    optimizer variables and SeedGenerator states
                                  (`include_optimizer=True`, the default; see
                                  `training_state.py`)

`config.json` is resolved through `loopax.src.serialization`: only
loopax's classes, `custom_objects` and registered classes can be named, so
loading a file never runs code from it. Any file name works (`.keras` or
`.loopax` read well).
"""

from __future__ import annotations

import collections
import datetime
import json
import os
import tempfile
import warnings
import zipfile
from typing import TYPE_CHECKING, Any

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.saving import archive, keras_format, training_state, weights_file
from loopax.src.utils import safe_open
from loopax.src.version import __version__

if TYPE_CHECKING:
    from loopax.src.models.model import Model

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS = weights_file.WEIGHTS_IN_ARCHIVE
# Files a layer's `save_assets(dir)` wrote: "assets/<layer key prefix>__files__/<path>".
ASSETS = "assets/"
_FILES = "__files__/"


def model_config(model: Model) -> dict:
    """`serialize(model)` with its build and compile configs: what
    `model.save` writes as config.json and `model.to_json()` returns."""
    # As Keras: a function or object a get_config() returns is written as its
    # serialized form (a custom from_config deserializes it).
    config = serialization.serialize_values(serialization.serialize(model))
    if "build_config" not in config:
        build_shape = getattr(model, "_build_input_shape", None)
        if build_shape is not None:
            config["build_config"] = {"input_shape": _jsonable_shape(build_shape)}
    compile_config = _compile_config(model)
    if compile_config is not None:
        config["compile_config"] = compile_config
    return config


def config_to_json(model: Model, config: dict, **kwargs: Any) -> str:
    """`json.dumps(config)`, or an error naming what is not JSON."""
    try:
        return json.dumps(config, **kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"Cannot save model {model.name!r}: its config is not JSON ({e}). A layer's "
            "get_config() must return plain values (numbers, strings, lists, dicts); a "
            "custom function (activation, loss...) must be registered with "
            "@loopax.saving.register_serializable() to be saved by name.") from e


def model_from_config_dict(config: dict, custom_objects: dict | None = None,
                           compile: bool = True, keras_configs: bool = True) -> Model:
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


def save_model(model: Model, filepath: str | os.PathLike, overwrite: bool = True,
               include_optimizer: bool = True, compress: bool = False) -> None:
    """Writes the archive. The arrays (weights, training state) are stored as they
    are unless `compress` (deflated: smaller, several times slower to write, as
    float weights barely compress); the JSON entries are always deflated.
    `load_model` reads either."""
    filepath = os.fspath(filepath)
    weights_file._check_writable(filepath, overwrite)
    config_text = config_to_json(model, model_config(model), indent=1)
    metadata = {"format": "loopax.model", "version": 1, "loopax_version": __version__,
                "date_saved": datetime.datetime.now().isoformat(timespec="seconds")}
    arrays = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with weights_file.atomic_write(filepath) as f, \
            zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(METADATA, json.dumps(metadata, indent=1))
        zf.writestr(CONFIG, config_text)
        _write_arrays(zf, WEIGHTS, arrays, weights_file.SafetensorsLayout(
            weights_file.weight_arrays(model), weights_file.WEIGHTS_METADATA))
        state = training_state.layout(model) if include_optimizer else None
        if state is not None:
            _write_arrays(zf, training_state.ENTRY, arrays, state)
        _save_assets(model, zf)


def _write_arrays(zf: zipfile.ZipFile, name: str, compress_type: int,
                  layout: weights_file.SafetensorsLayout) -> None:
    """Streams `layout` into entry `name` (as `writestr` would store it)."""
    info = zipfile.ZipInfo(name, datetime.datetime.now().timetuple()[:6])
    info.compress_type = compress_type
    info.external_attr = 0o600 << 16
    with zf.open(info, "w", force_zip64=layout.nbytes >= zipfile.ZIP64_LIMIT) as entry:
        layout.write(entry)


# Entries a model file may hold besides the assets of layers that load assets.
KNOWN_ENTRIES = (METADATA, CONFIG, WEIGHTS, training_state.ENTRY)
# The most bytes the assets of all layers may take (streamed to a temporary folder).
MAX_ASSETS_BYTES = 256 * 2**20
# An optimizer keeps at most this many float64 arrays (or twice as many float32
# ones) per weight: Adam's moments, AMSGrad's maxima, EMA, accumulated gradients.
_OPTIMIZER_ARRAYS_PER_WEIGHT = 4
_MISMATCH_HINT = ("The weights do not fit the model its config.json describes: the file is "
                  "damaged or was edited.")


@export("loopax.models.load_model", "loopax.saving.load_model")
def load_model(filepath: str | os.PathLike, custom_objects: dict | None = None,
               compile: bool = True, safe_mode: bool = True) -> Model:
    """Re-creates a model written by `model.save`, with its weights.

    Loading reads this file only, each entry bounded by its role (config.json
    at most `archive.MAX_CONFIG_BYTES`, the weights by the size of the model
    the config describes, checked from their header before any array is read);
    an entry the format does not have is refused.

    Args:
        filepath: the file `model.save` wrote.
        custom_objects: `{class_name: class}` for your own layers/models
            (or register them with `@loopax.saving.register_serializable()`).
        compile: re-compile with the saved compile config, when there is one,
            and restore the optimizer's state when the file has it (so
            `fit()` continues where the saved model was).
        safe_mode: True (the default) refuses a config that names a file to
            read (a lookup layer's `vocabulary` path), as Keras 3.12+; pass
            False only for a file you trust. loopax never runs code from a
            file, whatever `safe_mode` says.

    Returns:
        The model, built, with the saved weights (compiled when `compile` and the file
        has a compile config).

    Raises:
        FileNotFoundError: no file at `filepath`.
        ValueError: the file is not a loopax (or Keras) model archive, is damaged,
            or names something loading will not do; the message names the file.
    """
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"No model file at {filepath!r}.")
    if os.path.isdir(
        filepath
    ):  # OrbaxCheckpoint's folder (imported here: it builds on this module)
        from loopax.src.saving import checkpoint_folders
        with serialization.safe_mode_scope(safe_mode):
            return checkpoint_folders.load_model(filepath, custom_objects, compile)
    # One open file: the format is told from, and the model read from, one version of
    # the path (another process may replace it while this one loads).
    with safe_open.open_regular(filepath, "a model file") as f:
        if f.read(4) != b"PK\x03\x04":
            raise ValueError(f"{filepath} is not a model file written by model.save() (not a "
                             "zip archive). For a weights file use model.load_weights().")
        f.seek(0)
        with archive.open_archive(filepath, file=f) as zf, \
                serialization.safe_mode_scope(safe_mode):
            names = zf.namelist()
            if WEIGHTS not in names and keras_format.is_keras_archive(names):
                keras_format.check_member_names(names, filepath)
                return keras_format.load_model(zf, filepath, custom_objects, compile)
            return _load_loopax_archive(zf, names, filepath, custom_objects, compile)


def _load_loopax_archive(zf, names, filepath, custom_objects, compile):
    _check_entry_names(names, filepath)
    config = archive.parse_json(archive.read_entry(zf, CONFIG, archive.MAX_CONFIG_BYTES,
                                                   filepath, "a model config"), filepath)
    if not isinstance(config, dict):
        raise ValueError(f"{filepath}: config.json is not a model config (a JSON object).")
    with archive.build_budget(zf, WEIGHTS, filepath):
        model = _build_model(config, custom_objects, filepath)
    arrays = weights_file.read_entry_for(model, zf, filepath, hint=_MISMATCH_HINT)
    state_data = None
    if training_state.ENTRY in names:
        state_data = archive.read_entry(zf, training_state.ENTRY, _state_size_limit(model),
                                        filepath, "the optimizer and seed states")
    assets = _claimed_assets(model, names, zf, filepath)
    weights_file.assign_weights(model, arrays)
    del arrays
    _load_assets(model, zf, assets, filepath)
    compiled = False
    compile_config = config.get("compile_config")
    if compile and compile_config is not None:
        compiled = _restore_compile(model, compile_config, custom_objects)
    if state_data is not None:
        training_state.restore(model, bytes(state_data), filepath, compiled)
    return model


def _check_entry_names(names, filepath):
    """Refuses a file without config and weights, with an entry twice, or with
    an entry the format does not have (assets are checked once the model is
    built, by `_claimed_assets`)."""
    if CONFIG not in names or WEIGHTS not in names:
        raise ValueError(f"{filepath} is not a loopax model file: it lacks "
                         f"{CONFIG} or {WEIGHTS}.")
    repeated = sorted(n for n, count in collections.Counter(names).items() if count > 1)
    if repeated:
        raise ValueError(f"{filepath}: the archive holds entries more than once "
                         f"{serialization.quoted(repeated)}; refused (a damaged or edited file).")
    unknown = [n for n in names if n not in KNOWN_ENTRIES and not n.startswith(ASSETS)]
    if unknown:
        raise ValueError(f"{filepath}: entry {serialization.quoted(unknown[0])} is not part of a "
                         "loopax model file" + (f" ({len(unknown)} such entries)"
                                                if len(unknown) > 1 else "") + "; refused.")


def _build_model(config, custom_objects, filepath):
    """The model config.json describes, or a ValueError naming the file."""
    try:
        return model_from_config_dict(config, custom_objects, compile=False,
                                      keras_configs=False)
    except RecursionError:
        raise ValueError(f"{filepath}: config.json nests too deeply to be built.") from None
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as e:
        message = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
        if len(message) > 2000:
            message = message[:2000] + f"... ({len(message)} characters)"
        raise ValueError(f"{filepath}: its config.json cannot be built: {message}") from None


def _state_size_limit(model):
    """The most bytes training_state.safetensors may take for `model`."""
    seeds = {k: tuple(v.shape) for k, v in training_state._seed_states(model).items()}
    weights = weights_file.expected_weights(model)
    return (weights_file.weights_size_limit(seeds)
            + _OPTIMIZER_ARRAYS_PER_WEIGHT * weights_file.weights_size_limit(weights))


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
        config = serialization.serialize_values(get())
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


def _claimed_assets(model, names, zf, filepath):
    """`[(layer, folder prefix, [entry names])]` for the layers that load assets;
    refuses an asset entry no layer claims, one whose path leaves its folder, and
    assets larger than `MAX_ASSETS_BYTES` in all, before any is read."""
    asset_names = [n for n in names if n.startswith(ASSETS) and not n.endswith("/")]
    claimed, out = set(), []
    for prefix, layer in weights_file.layer_tree(model):
        if not callable(getattr(layer, "load_assets", None)):
            continue
        start = f"{ASSETS}{prefix}{_FILES}"
        mine = [n for n in asset_names if n.startswith(start)]
        for name in mine:
            parts = name[len(start):].split("/")
            if "\\" in name or ":" in name or ".." in parts or "" in parts:
                raise ValueError(f"{filepath}: asset entry {serialization.quoted(name)} points "
                                 "outside its folder; refusing to read the file.")
        claimed.update(mine)
        out.append((layer, start, mine))
    unclaimed = [n for n in asset_names if n not in claimed]
    if unclaimed:
        raise ValueError(
            f"{filepath}: entry {serialization.quoted(unclaimed[0])} belongs to no layer "
            "that loads assets"
            + (f" ({len(unclaimed)} such entries)" if len(unclaimed) > 1 else "")
            + "; refused."
        )
    total = sum(zf.getinfo(n).file_size for n in claimed)
    if total > MAX_ASSETS_BYTES:
        raise ValueError(f"{filepath}: its assets declare {total} bytes, more than loopax "
                         f"extracts ({MAX_ASSETS_BYTES} bytes); refused.")
    return out


def _load_assets(model, zf, assets, filepath):
    """Gives each layer with `load_assets(dir)` a temporary directory holding the
    files its `save_assets` wrote, streamed from the archive."""
    for layer, start, names in assets:
        if not names:
            continue
        with tempfile.TemporaryDirectory() as directory:
            for name in names:
                path = os.path.join(directory, *name[len(start):].split("/"))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as out:
                    archive.copy_entry(zf, name, out, MAX_ASSETS_BYTES, filepath, "assets")
            layer.load_assets(directory)
