"""Reading Keras 3 files as data: `.keras` archives and `.weights.h5`.

A Keras 3 `.keras` file is a zip of

    metadata.json        {"keras_version", "date_saved"}
    config.json          {"module", "class_name", "config", "registered_name", ...}
    model.weights.h5     HDF5: layers/<name>/vars/<i>, nested for sub-models

`translate_config` turns Keras's config into loopax's form in one place
(built-in Keras classes by name, DTypePolicy as its dtype name, functional
tensor references as loopax's `__tensor__`), and `serialization.deserialize`
builds the model from it, as for loopax's own files. Before anything is built
the whole config is checked: a class or function is accepted only if it is a
Keras built-in that loopax has, or one the caller passed as `custom_objects` or
registered with `@register_serializable()`. A Lambda's function is found the
same way (or is a loopax activation of that name); Python bytecode (a Keras
`lambda`), a `module` outside Keras or a foreign `registered_name` is refused,
every offender listed in one error. Nothing is imported, unpickled or evaluated, and
nothing is extracted to disk: the HDF5 file is read from the archive stream.

The HDF5 walk refuses soft and external links, virtual datasets, external
storage, non-numeric dtypes and filters that are not built into HDF5, and
compares each dataset's shape with the weight it fills before reading it.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import posixpath
import warnings
import zipfile
from typing import IO, TYPE_CHECKING, Any, Iterable, Sequence

from loopax.src import dtypes, mixed_precision, serialization
from loopax.src.layers.core import lambda_layer
from loopax.src.module import Module, _collect, _snake_case, tracked_items
from loopax.src.saving import archive
from loopax.src.serialization import quoted
from loopax.src.state import Variable

if TYPE_CHECKING:
    from loopax.src.layers.layer import Layer
    from loopax.src.models.model import Model

CONFIG = "config.json"
WEIGHTS = "model.weights.h5"
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

# Keras-only options loopax has no argument for, at the value that makes them
# no-ops; any other value is refused rather than silently ignored.
_KERAS_ONLY_DEFAULTS = {
    "sparse": False, "ragged": False, "optional": False,            # InputLayer
    "quantization_config": None, "lora_rank": None, "lora_alpha": None,
    "synchronized": False, "renorm": False, "renorm_clipping": None,
    "renorm_momentum": 0.99,                                        # BatchNormalization
    "rms_scaling": False,                                           # LayerNormalization
    "use_gate": False, "sliding_window": None,                      # MultiHeadAttention
    "input_axes": None, "output_axes": None,                        # variance-scaling inits
}

# Keras's quantized dtype policies: a layer's `dtype` entry becomes the policy's name.
_QUANTIZED_POLICIES = ("QuantizedDTypePolicy", "QuantizedFloat8DTypePolicy", "Int4DTypePolicy")


def _quantized_policy_name(entry, where, reader):
    try:
        return mixed_precision.deserialize(entry).name
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        reader.refuse(where, f"dtype policy {entry!r:.120}", f"is not valid: {error}")
        return None


# HDF5 filters compiled into libhdf5 (deflate, shuffle, fletcher32, szip, nbit,
# scaleoffset) and h5py's lzf: any other id would make HDF5 load a plugin.
_BUILTIN_FILTERS = {1, 2, 3, 4, 5, 6, 32000}


def is_keras_archive(names: Iterable[str]) -> bool:
    return CONFIG in names and WEIGHTS in names


def check_member_names(names: Iterable[str], where: str) -> None:
    """Refuses archive entries that name a place outside the archive root."""
    bad = [n for n in names if n.startswith(("/", "\\")) or "\\" in n or ":" in n
           or ".." in n.split("/")]
    if bad:
        raise ValueError(f"{where}: the archive has entries that point outside it {bad}; "
                         "refusing to read it (a model file never needs such paths).")


# --------------------------------------------------------------------------
# Configs
# --------------------------------------------------------------------------

def _is_keras_module(module: str) -> bool:
    return module is None or module == "keras" or (
        isinstance(module, str) and module.startswith("keras."))


def _user_object(names, custom_objects):
    for name in names:
        if isinstance(name, str):
            obj = serialization.get_registered_object(name, custom_objects)
            if obj is not None:
                return name, obj
    return None, None


def _accepted_arguments(cls):
    """The keyword arguments `cls(...)` takes, following `**kwargs` up the MRO."""
    names = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters.values()
        names.update(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                          p.KEYWORD_ONLY))
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return names


class _Translator:
    """Keras config -> loopax config; collects every refusal instead of
    stopping at the first, so one error names all offenders."""

    def __init__(self, custom_objects):
        self.custom_objects = custom_objects or {}
        self.problems = []

    def value(self, value, where):
        if isinstance(value, list):
            return [self.value(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if not isinstance(value, dict):
            return value
        if "class_name" in value:
            return self.object(value, where)
        return {k: self.value(v, f"{where}.{k}") for k, v in value.items()}

    def refuse(self, where, what, why):
        self.problems.append(f"{where}: {what} {why}")

    def object(self, entry, where):
        if not isinstance(entry, dict):
            self.refuse(where, f"{entry!r:.80}", "is not a serialized object.")
            return None
        class_name = entry.get("class_name")
        module = entry.get("module")
        registered = entry.get("registered_name")
        inner = entry.get("config", {})
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            where = f"layer {quoted(inner['name'])}"
        what = quoted(class_name) + (f" (module {quoted(module)})" if module else "")
        if registered not in (None, class_name, "function"):
            what += f" registered as {quoted(registered)}"
        if not isinstance(class_name, str):
            self.refuse(where, what, "is not a class name.")
            return None
        if class_name == "function":
            return self.function(inner, module, registered, where)
        if class_name == "__lambda__":
            self.refuse(where, "a Python lambda", "is compiled bytecode; loopax never runs "
                        "code from a file. Rewrite it as a named function and register it "
                        "with @loopax.saving.register_serializable().")
            return None
        key, user = _user_object([registered, class_name], self.custom_objects)
        if user is None and class_name in ("DTypePolicy", "FloatDTypePolicy") and \
                _is_keras_module(module) and isinstance(inner, dict):
            return inner.get("name")
        if user is None and class_name in _QUANTIZED_POLICIES and _is_keras_module(module):
            return _quantized_policy_name(entry, where, self)
        if user is None:
            foreign = not _is_keras_module(module) or registered not in (None, class_name)
            cls = serialization.builtin(class_name)
            if foreign or cls is None or not inspect.isclass(cls):
                name = registered if registered not in (None, class_name) else class_name
                why = ("is not a Keras built-in: if it is your class, pass "
                       f"custom_objects={{{quoted(name)}: YourClass}} to load_model or register "
                       "it with @loopax.saving.register_serializable()." if foreign else
                       "is a Keras class loopax has no counterpart for (pass your own as "
                       f"custom_objects={{{quoted(class_name)}: YourClass}}).")
                self.refuse(where, what, why)
                return None
        else:
            cls = user
        label = f"{where} ({quoted(class_name)})"
        is_functional = class_name == "Functional" or (
            isinstance(inner, dict) and "input_layers" in inner)
        if is_functional and not isinstance(inner, dict):
            self.refuse(where, what, "has no config dict.")
            return None
        if is_functional:
            config = self.functional(inner, label)
        elif class_name == "Lambda" and user is None and isinstance(inner, dict):
            config = {key: self.lambda_value(key, value, where, f"{label}.{key}")
                      for key, value in inner.items()}
            config = self.drop_keras_only(cls, config, label)
        else:
            config = self.value(inner, label)
            if class_name == "MultiHeadAttention" and user is None:
                config = _default_attention_axes(config, entry.get("build_config"))
            if user is None and isinstance(config, dict) and class_name != "Sequential":
                config = self.drop_keras_only(cls, config, label)
        out = {"class_name": class_name, "config": config}
        if user is not None and key != class_name:
            out["registered_name"] = key
        if "name" in entry:                           # a functional model's layer entry
            out["name"] = entry["name"]
            out["inbound_nodes"] = [self.call(node, label)
                                    for node in entry.get("inbound_nodes", [])]
        return out

    def function(self, name, module, registered, where):
        key, user = _user_object([registered if registered != "function" else None, name],
                                 self.custom_objects)
        if user is not None:
            return {"class_name": "function", "config": key}
        builtin = serialization.builtin(name) if isinstance(name, str) else None
        if inspect.isfunction(builtin):
            return name
        what = f"function {quoted(name)}" + (f" (module {quoted(module)})" if module else "")
        self.refuse(where, what, "is not a loopax built-in: if it is your function, pass "
                    f"custom_objects={{{quoted(name)}: your_function}} to load_model or "
                    "register it with @loopax.saving.register_serializable().")
        return None

    def lambda_value(self, key, value, where, label):
        """One entry of a Lambda's config: functions (the function, a callable
        output_shape or mask, an argument) by name, arrays (a fixed mask, an
        argument) as data, the rest as any config value."""
        kind = value.get("class_name") if isinstance(value, dict) else None
        if kind in lambda_layer.ARRAY_CLASSES:
            return value
        if kind in ("function", "__lambda__"):
            return self.lambda_function(value, where)
        if key == "arguments" and isinstance(value, dict) and kind is None:
            return {k: self.lambda_value(k, v, where, f"{label}.{k}") for k, v in value.items()}
        return self.value(value, label)

    def lambda_function(self, entry, where):
        """A Lambda's function entry -> loopax's (`lambda_layer.function_config`
        form): a function passed in `custom_objects` or registered, or a loopax
        activation of that name (Keras resolves those too). Bytecode is refused."""
        if entry.get("class_name") == "__lambda__":
            self.refuse(where, "a Lambda layer", "holds Python bytecode (a Python lambda); "
                        "loopax never runs code from a file, whatever safe_mode says. In "
                        "Keras, define the function with `def`, register it with "
                        "@keras.saving.register_keras_serializable() and save again, then load "
                        "with custom_objects={'package>name': function} (or register it with "
                        "@loopax.saving.register_keras_serializable()); or pass a layer class "
                        "as custom_objects={'Lambda': YourLayer}.")
            return None
        name, registered = entry.get("config"), entry.get("registered_name")
        short = name.split(">")[-1] if isinstance(name, str) else None   # "package>name"
        key, user = _user_object([registered if registered != "function" else None, name,
                                  short], self.custom_objects)
        if user is not None:
            return {"class_name": "function", "config": key}
        if entry.get("class_name") == "function" and \
                lambda_layer.builtin_function("loopax.activations", name) is not None:
            return {"class_name": "function", "config": name, "module": "loopax.activations"}
        self.refuse(where, f"the Lambda layer's function {quoted(name)}", "is not a loopax "
                    "activation: pass it as custom_objects={" + quoted(name) + ": function} to "
                    "load_model or register it with "
                    "@loopax.saving.register_keras_serializable().")
        return None

    def drop_keras_only(self, cls, config, label):
        accepted = _accepted_arguments(cls)
        out = {}
        for key, value in config.items():
            if key in accepted:
                out[key] = value
            elif key in _KERAS_ONLY_DEFAULTS and value == _KERAS_ONLY_DEFAULTS[key]:
                continue
            else:
                self.refuse(
                    label,
                    f"option {serialization.cut(str(key))}={quoted(value)}",
                    f"is not supported by loopax's {cls.__name__}.",
                )
        return out

    def tensor_structure(self, value, where):
        """Keras's [layer_name, node_index, tensor_index] (in a list, dict or
        alone) -> loopax's {"__tensor__": [...]}."""
        if _is_tensor_reference(value):
            return {"__tensor__": list(value)}
        if isinstance(value, list):
            return [self.tensor_structure(v, where) for v in value]
        if isinstance(value, dict):
            return {"__dict__": {k: self.tensor_structure(v, where) for k, v in value.items()}}
        self.refuse(where, f"{value!r:.80}", "is not a tensor reference.")
        return None

    def functional(self, config, label):
        out = {k: self.value(v, f"{label}.{k}") for k, v in config.items()
               if k not in ("layers", "input_layers", "output_layers")}
        out["layers"] = [self.object(entry, f"{label}.layers[{i}]")
                         for i, entry in enumerate(config.get("layers", []))]
        for key in ("input_layers", "output_layers"):
            out[key] = self.tensor_structure(config.get(key), f"{label}.{key}")
        return out

    def call(self, node, label):
        """One recorded call: `{"args": [...], "kwargs": {...}}`, tensors as references."""
        def arg(value, where):
            if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
                history = value.get("config", {}).get("keras_history")
                if _is_tensor_reference(history):
                    return {"__tensor__": list(history)}
                self.refuse(where, "a tensor", "has no valid keras_history.")
                return None
            if isinstance(value, dict) and "class_name" in value:
                self.refuse(where, f"object {quoted(value['class_name'])}", "is not allowed as a "
                            "call argument in a Keras file (only tensors and plain values).")
                return None
            if isinstance(value, dict):
                return {"__dict__": {k: arg(v, where) for k, v in value.items()}}
            if isinstance(value, list):
                return [arg(v, where) for v in value]
            return value

        if not isinstance(node, dict):
            self.refuse(label, f"call {node!r:.80}", "is not a recorded layer call.")
            return {"args": [], "kwargs": {}}
        where = f"{label} call"
        # Keras records `training` and `mask=None` with each call, but fit /
        # predict / evaluate override the recorded `training`; loopax passes
        # them from the outer call too, so neither is kept.
        kwargs = {k: arg(v, where) for k, v in dict(node.get("kwargs", {})).items()
                  if k != "training" and not (k == "mask" and v is None)}
        return {"args": arg(list(node.get("args", [])), where), "kwargs": kwargs}


def _default_attention_axes(config, build_config):
    """Keras writes the axes a built MultiHeadAttention resolved `None` to
    (every axis between batch and features); loopax's config says None."""
    shapes = (build_config or {}).get("shapes_dict", {}) if isinstance(build_config, dict) else {}
    query_shape = shapes.get("query_shape") if isinstance(shapes, dict) else None
    axes = config.get("attention_axes") if isinstance(config, dict) else None
    if isinstance(query_shape, list) and axes == list(range(1, len(query_shape) - 1)):
        config = {**config, "attention_axes": None}
    return config


def _is_tensor_reference(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and all(isinstance(i, int) and not isinstance(i, bool) for i in value[1:]))


def translate_config(config: Any, custom_objects: dict | None = None,
                     where: str = "the Keras file") -> dict:
    """Keras 3 `config.json` -> the dict `serialization.deserialize` builds.

    Raises ValueError naming every class, function or option that loopax
    will not build, before anything is built.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"{where} looks like a Keras file, but its config.json does not "
                         "describe a model (no 'class_name').")
    translator = _Translator(custom_objects)
    out = translator.object(config, "model")
    problems = translator.problems
    if problems:
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise ValueError(
            f"{where} names classes, functions or options that loopax will not load "
            "(loading never imports, unpickles or runs code from a file):\n  - "
            + "\n  - ".join(problems[:20]) + more)
    return out


# --------------------------------------------------------------------------
# Weights: Keras's HDF5 layout
# --------------------------------------------------------------------------

def _models():
    """(Functional, Sequential), found through the registry they put themselves
    in (saving sits below models and must not import them)."""
    return serialization.core_class("Functional"), serialization.core_class("Sequential")


# Keras classes exported (and named in configs) under another name than their
# Python class's, which names their weights in the HDF5 file.
_PYTHON_CLASS_NAMES = {"GroupQueryAttention": "GroupedQueryAttention"}


def keras_class_names(config: dict, model: Any, out: dict | None = None) -> dict:
    """`{id(layer): Keras class name}` for the layers of a model built from the
    (translated) Keras `config`: a custom class is saved under its Keras
    name, whatever the loopax class standing in for it is called."""
    out = {} if out is None else out
    inner = config.get("config") if isinstance(config, dict) else None
    for entry in (inner or {}).get("layers", []) if isinstance(inner, dict) else []:
        name = (entry.get("config") or {}).get("name") if isinstance(entry, dict) else None
        try:
            layer = model.get_layer(name)
        except (ValueError, KeyError, TypeError):
            continue                                  # an InputLayer a Sequential folds in
        out[id(layer)] = _PYTHON_CLASS_NAMES.get(entry["class_name"], entry["class_name"])
        keras_class_names(entry, layer, out)
    return out


def keras_weight_paths(model: Layer, class_names: dict | None = None,
                       ) -> list[tuple[str, Variable, str]]:
    """`(h5 dataset path, variable, layer path)` for each weight of `model`,
    where Keras 3 writes it: `layers/<name>/vars/<i>` with `<name>` the class
    in snake case numbered among siblings (dense, dense_1), own variables
    trainable first then non-trainable, each in creation order (a quantized
    layer's in the order it created them, Keras's for the mode); a sub-layer
    held in an attribute under that attribute's public name. `class_names`
    (from `keras_class_names`) gives the Keras class of a layer."""
    class_names = class_names or {}
    containers = _models()
    out = []
    seen = set()

    def container(items, prefix):
        used = {}
        for item in items:
            if isinstance(item, Module) and id(item) not in seen:
                name = _snake_case(class_names.get(id(item), type(item).__name__))
                n = used.get(name, -1) + 1
                used[name] = n
                visit(item, f"{prefix}/{name}" + (f"_{n}" if n else ""))

    def visit(obj, prefix):
        seen.add(id(obj))
        label = f"{prefix} ({getattr(obj, 'name', type(obj).__name__)!r})"
        if isinstance(obj, containers):
            container(obj.layers, f"{prefix}/layers".lstrip("/"))
            return
        own, subs = [], []
        for attr, value in tracked_items(obj):     # as Module._direct walks them
            variables, trackables = [], []
            _collect(value, set(), variables, trackables)
            for var in variables:
                if id(var) not in seen and not var.is_seed_state:
                    seen.add(id(var))
                    own.append(var)
            modules = [m for m in trackables if isinstance(m, Module)]
            if isinstance(value, Module):
                subs.append((_public_name(obj, attr, value), value))
            elif modules:
                subs.append((_public_name(obj, attr, value), modules))
        if getattr(obj, "quantization_mode", None) is None:
            own.sort(key=lambda v: not v.trainable)      # stable: creation order kept
        # (a quantized layer writes Keras's order for its mode, which it was built in)
        for i, var in enumerate(own):
            out.append((f"{prefix}/vars/{i}".lstrip("/"), var, label))
        for attr, value in sorted(subs, key=lambda s: (s[0].startswith("_"), s[0])):
            if isinstance(value, list):
                container(value, f"{prefix}/{attr}".lstrip("/"))
            elif id(value) not in seen:
                visit(value, f"{prefix}/{attr}")

    visit(model, "")
    return out


def _public_name(obj, attr, value):
    """Keras visits public attributes first, so `_query_dense` exposed as the
    property `query_dense` is saved under the public name."""
    public = attr.lstrip("_")
    if public != attr and getattr(obj, public, None) is value:
        return public
    return attr


def _h5py():
    try:
        import h5py
    except ImportError:
        raise ImportError("Reading Keras .keras / .weights.h5 files needs h5py: "
                          "pip install 'loopax[keras-files]'.") from None
    return h5py


def open_h5(fileobj: IO[bytes], where: str) -> Any:
    h5py = _h5py()
    try:
        return h5py.File(fileobj, "r")
    except (OSError, ValueError) as e:
        raise ValueError(f"{where}: the HDF5 weights cannot be read (truncated or not "
                         f"HDF5: {e}).") from None


def _needed_datasets(h5file: Any, paths: Iterable[str], where: str) -> dict:
    """{path: dataset} for those of `paths` the file has, opening nothing else:
    each step of a path must be a hard link (soft and external links, which
    could lead out of the file, are refused), no two paths may name one object,
    and each dataset is checked by `_check_dataset`."""
    h5py = _h5py()
    found: dict = {}
    addresses: dict = {}
    for path in paths:
        obj, parts = h5file, path.split("/")
        for depth, name in enumerate(parts):
            if not isinstance(obj, h5py.Group) or not _hard_link(obj, name, where,
                                                                 parts[:depth + 1]):
                obj = None
                break
            obj = obj[name]
        if not isinstance(obj, h5py.Dataset):
            continue
        address = h5py.h5o.get_info(obj.id).addr
        if address in addresses:
            raise ValueError(f"{where}: {quoted(path)} and {quoted(addresses[address])} are "
                             "links to one dataset; not a Keras weights file.")
        addresses[address] = path
        _check_dataset(obj, path, where)
        found[path] = obj
    return found


def _hard_link(group: Any, name: str, where: str, parts: list[str]) -> bool:
    """Whether `group` has a hard link `name` (False: no such link); a soft or
    external link is refused without being followed."""
    h5py, key = _h5py(), name.encode()
    if not group.id.links.exists(key):
        return False
    kind = group.id.links.get_info(key).type
    if kind == h5py.h5l.TYPE_HARD:
        return True
    try:
        value = group.id.links.get_val(key)
    except (OSError, KeyError, TypeError, ValueError):
        value = b"?"
    if kind == h5py.h5l.TYPE_EXTERNAL and isinstance(value, tuple):
        what, target = "ExternalLink", b":".join(value)
    else:
        what, target = "SoftLink", b":" + (value if isinstance(value, bytes) else b"?")
    raise ValueError(f"{where}: {quoted('/'.join(parts))} is a {what} to "
                     f"{quoted(target.decode('utf-8', 'replace'))}; loopax follows no HDF5 "
                     "links (Keras writes none), so the file is refused.")


def _other_datasets(h5file: Any, wanted: Iterable[str], limit: int = 20,
                    ) -> tuple[list[str], int]:
    """(the first `limit` paths, how many) of the datasets outside `wanted` and
    Keras's optimizer state: names only, no dataset opened (HDF5 visits each
    object once, along hard links only)."""
    h5py = _h5py()
    names: list[str] = []
    count = 0

    def visit(name, info):
        nonlocal count
        if info.type != h5py.h5o.TYPE_DATASET:
            return None
        path = name.decode("utf-8", "replace")
        if path not in wanted and not path.startswith("optimizer/"):
            count += 1
            if len(names) < limit:
                names.append(serialization.cut(path))
        return None

    h5py.h5o.visit(h5file.id, visit, info=True)
    return names, count


def _check_dataset(ds, path, where):
    if ds.is_virtual or ds.external:
        raise ValueError(f"{where}: dataset {path!r} stores its data in other files "
                         "(virtual or external storage); refused.")
    plist = ds.id.get_create_plist()
    filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    if any(f not in _BUILTIN_FILTERS for f in filters):
        raise ValueError(f"{where}: dataset {path!r} needs HDF5 filter(s) {filters} "
                         "that are not built in (a plugin would be loaded); refused.")
    if ds.dtype.kind not in "biuf" or ds.dtype.hasobject or ds.dtype.names:
        raise ValueError(f"{where}: dataset {path!r} has dtype {ds.dtype}, not a "
                         "numeric weight.")


def _check_storage(ds, path, where):
    """Before reading: the bytes stored must be those the shape declares. HDF5
    would read a contiguous dataset past its own storage (into other data of
    the file), and fill one with no storage with zeros."""
    declared = int(ds.size) * ds.dtype.itemsize
    stored = ds.id.get_storage_size()
    if (stored != declared if ds.chunks is None else stored == 0 < declared):
        raise ValueError(f"{where}: dataset {path!r} declares shape {ds.shape} "
                         f"({declared} bytes) but stores {stored} bytes; refused.")


def assign_h5_weights(model: Layer, h5file: Any, where: str, skip_mismatch: bool = False,
                      class_names: dict | None = None) -> None:
    """Fills `model`'s weights from Keras's HDF5 layout; refuses (or with
    `skip_mismatch` warns about) missing, unknown and mis-shaped weights,
    reading no dataset before every shape is checked."""
    expected = keras_weight_paths(model, class_names)
    wanted = {path for path, _, _ in expected}
    try:
        datasets = _needed_datasets(h5file, [path for path, _, _ in expected], where)
        # Keras's optimizer state (a compiled model's) is not restored, so not read.
        unknown, n_unknown = _other_datasets(h5file, wanted)
    except (OSError, KeyError, RuntimeError) as e:
        raise ValueError(f"{where}: the HDF5 weights cannot be read (truncated or damaged: "
                         f"{str(e)[:200]}).") from None
    missing = [f"{path} for {label}" for path, _, label in expected if path not in datasets]
    mis_shaped = [f"{path} for {label}: file {datasets[path].shape}, model {var.shape}"
                  for path, var, label in expected
                  if path in datasets and tuple(datasets[path].shape) != var.shape]
    problems = []
    if missing:
        problems.append("missing from the file: " + _some(missing))
    if unknown:
        problems.append("in the file but not in the model: " + "; ".join(unknown)
                        + (f"; and {n_unknown - len(unknown)} more" if n_unknown > len(unknown)
                           else ""))
    if mis_shaped:
        problems.append("different shapes: " + _some(mis_shaped))
    if problems:
        message = (f"Keras weights in {where} do not match model {model.name!r}:\n  "
                   + "\n  ".join(problems))
        if not model.weights:
            message += ("\nThe model has no weights yet: build it first (call it on a "
                        "batch or call model.build(input_shape)).")
        if not skip_mismatch:
            raise ValueError(message + "\n(load_weights(..., skip_mismatch=True) loads "
                             "the weights that do match.)")
        warnings.warn(message + "\nLoading only the matching weights.", stacklevel=3)
    values = []
    for path, var, label in expected:
        ds = datasets.get(path)
        if ds is None or tuple(ds.shape) != var.shape:
            continue
        _check_storage(ds, path, where)
        try:
            values.append((var, ds[()]))
        except OSError as e:
            raise ValueError(f"{where}: dataset {path!r} for {label} cannot be read "
                             f"(truncated or damaged: {e}).") from None
    for var, value in values:
        var.assign(dtypes.asarray(value, dtype=var.dtype))


def _some(items: Sequence, limit: int = 20) -> str:
    more = f"; and {len(items) - limit} more" if len(items) > limit else ""
    return "; ".join(items[:limit]) + more


def load_h5_weights(model: Layer, f: IO[bytes], filepath: str,
                    skip_mismatch: bool = False) -> None:
    """`model.load_weights(path)` for the Keras `.weights.h5` file open as `f`."""
    with _damage_named(filepath, None), open_h5(f, filepath) as h5file:
        assign_h5_weights(model, h5file, filepath, skip_mismatch=skip_mismatch)


def load_archive_weights(model: Layer, zf: zipfile.ZipFile, filepath: str,
                         skip_mismatch: bool = False) -> None:
    """`model.load_weights(path)` for the Keras 3 `.keras` archive open as `zf`."""
    check_member_names(zf.namelist(), filepath)
    limit = zf.getinfo(WEIGHTS).file_size if skip_mismatch else h5_size_limit(model)
    _assign_from_entry(model, zf, filepath, limit, skip_mismatch=skip_mismatch)


def _assign_from_entry(model, zf, filepath, limit, **kwargs):
    """`assign_h5_weights` from the archive's HDF5 entry, read as a stream (at
    most `limit` bytes); damage found while HDF5 reads it names the file."""
    with _damage_named(filepath, WEIGHTS), \
            archive.open_entry(zf, WEIGHTS, limit, filepath, "the weights of this model") as f, \
            open_h5(f, filepath) as h5file:
        assign_h5_weights(model, h5file, posixpath.join(filepath, WEIGHTS), **kwargs)


@contextlib.contextmanager
def _damage_named(filepath, entry):
    """Whatever h5py or zipfile raise on a damaged file (h5py's own ValueErrors,
    OverflowErrors, a zip CRC error met while HDF5 reads) becomes `archive.corrupt`,
    naming the file; loopax's own errors, which name it, pass unchanged."""
    try:
        yield
    except ValueError as e:
        if filepath in str(e):
            raise
        raise archive.corrupt(filepath, entry, e) from None
    except (*archive.DAMAGE, KeyError, RuntimeError, TypeError, OverflowError) as e:
        raise archive.corrupt(filepath, entry, e) from None


# HDF5 bookkeeping allowed on top of the data, and how many times the weights'
# size a Keras file may hold (its optimizer's slots are saved alongside).
_H5_OVERHEAD_BYTES = 16 * 2**20
_H5_WEIGHT_COPIES = 8


def h5_size_limit(model: Layer) -> int:
    """The most bytes a Keras `model.weights.h5` entry for `model` may take: the
    weights at float64 with their optimizer's slots, plus HDF5's own records."""
    elements = sum(math.prod(w.shape) for w in model.weights)
    return _H5_OVERHEAD_BYTES + _H5_WEIGHT_COPIES * 8 * elements


# --------------------------------------------------------------------------
# Whole models
# --------------------------------------------------------------------------

def load_model(zf: zipfile.ZipFile, filepath: str, custom_objects: dict | None = None,
               compile: bool = True) -> Model:
    """The model in a Keras 3 `.keras` archive `zf` (an open ZipFile).

    Keras's compile config is not restored (its optimizer and losses are
    Keras objects); with `compile=True` a warning says to compile again.
    """
    config = archive.parse_json(archive.read_entry(zf, CONFIG, archive.MAX_CONFIG_BYTES,
                                                   filepath, "a model config"), filepath)
    build_config = config.get("build_config") if isinstance(config, dict) else None
    try:
        with archive.build_budget(zf, WEIGHTS, filepath):
            translated = translate_config(config, custom_objects, where=filepath)
            model = serialization.deserialize(translated, custom_objects=custom_objects)
            input_shape = build_config.get("input_shape") if isinstance(build_config,
                                                                        dict) else None
            if not model.built and isinstance(input_shape, list):
                model.build(tuple(input_shape))
    except RecursionError:
        raise ValueError(f"{filepath}: config.json nests too deeply to be built.") from None
    except (TypeError, KeyError, AttributeError, IndexError) as e:
        raise ValueError(f"{filepath}: the Keras config could not be built as loopax "
                         f"layers ({type(e).__name__}: {str(e)[:500]}).") from None
    _assign_from_entry(model, zf, filepath, h5_size_limit(model),
                       class_names=keras_class_names(translated, model))
    if compile and isinstance(config, dict) and config.get("compile_config"):
        warnings.warn(f"{filepath}: the Keras compile() arguments are not restored; call "
                      "model.compile(...) on the loaded model before fit/evaluate.",
                      stacklevel=3)
    return model
