"""Objects <-> JSON-able configs, resolved by class name through a registry.

`serialize(obj)` gives `{"class_name": ..., "config": obj.get_config()}`
(plus `"registered_name"` for registered custom classes);
`deserialize(config)` looks the class up and calls its `from_config`.

A name resolves, in order, to: `custom_objects` passed in (or an active
`custom_object_scope`), classes registered with `@register_serializable()`,
then loopax's own classes and functions (each registered where it is defined,
`register_builtins`). Nothing else: a config is data, and loading
one never imports a module, unpickles or evaluates anything, so a model file
cannot run code.

A base module: layers and optimizers serialize their nested objects with it.
The file formats that use it are `loopax/src/saving/` (see its README.md).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import warnings

from loopax.src.api_export import export

# Names and values quoted in error messages are cut to this many characters.
MAX_QUOTED = 120


def quoted(value, limit=MAX_QUOTED) -> str:
    """`repr(value)` cut to `limit` characters (a 10 MB class name in a file
    must not become a 10 MB error message)."""
    return cut(repr(value), limit)


def cut(text: str, limit=MAX_QUOTED) -> str:
    """`text`, or its first `limit` characters and how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


_REGISTERED: dict[str, object] = {}      # "package>Name" -> class or function
_NAME_OF: dict[int, str] = {}            # id(object) -> "package>Name"


class _Scopes(threading.local):
    def __init__(self):
        self.stack: list[dict] = []
        self.safe_mode: list[bool] = []


_scopes = _Scopes()


@export(
    "loopax.saving.register_keras_serializable",
    "loopax.saving.register_serializable",
    "loopax.utils.register_keras_serializable",
)
def register_serializable(package="Custom", name=None):
    """Decorator registering a class (or function) for `load_model` and
    `deserialize` under `"package>name"` (name defaults to `__name__`).

        @loopax.saving.register_serializable(package="my_project")
        class Scale(loopax.layers.Layer): ...

    Args:
        package: The name's prefix (default "Custom").
        name: The name after the `>`; None (the default) is the object's `__name__`.

    Returns:
        The decorator; it returns the object unchanged.

    Raises:
        TypeError: (when decorating) a class without `get_config()`.
    """
    def decorator(obj):
        registered = f"{package}>{name or obj.__name__}"
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise TypeError(f"Cannot register {obj.__name__}: it has no get_config().")
        _REGISTERED[registered] = obj
        _NAME_OF[id(obj)] = registered
        return obj
    return decorator


@export("loopax.saving.get_registered_name", "loopax.utils.get_registered_name")
def get_registered_name(obj) -> str:
    """`"package>Name"` for a registered object, else its `__name__`.

    Args:
        obj: A class, function or instance.

    Returns:
        The name, a str (an instance without `__name__` gives its class's name).
    """
    return _NAME_OF.get(id(obj), getattr(obj, "__name__", type(obj).__name__))


def is_registered(obj) -> bool:
    """Whether `obj` was registered with `register_serializable`."""
    return id(obj) in _NAME_OF and _REGISTERED.get(_NAME_OF[id(obj)]) is obj


@export("loopax.saving.get_custom_objects", "loopax.utils.get_custom_objects")
def get_custom_objects() -> dict:
    """Returns the registry of custom objects (`"package>Name"` -> object); editing the
    dict edits the registry."""
    return _REGISTERED


@export(
    "loopax.saving.CustomObjectScope",
    "loopax.saving.custom_object_scope",
    "loopax.utils.CustomObjectScope",
    "loopax.utils.custom_object_scope",
)
@contextlib.contextmanager
def custom_object_scope(*objects):
    """Makes `{name: class_or_function}` dicts resolvable inside the block.

    `with custom_object_scope({"Scale": Scale}): model = load_model(path)`.

    Args:
        *objects: Dicts `{name: class_or_function}` (None entries are skipped); later
            ones win.

    Returns:
        A context manager (binding nothing with `as`).
    """
    merged = {}
    for mapping in objects:
        merged.update(mapping or {})
    _scopes.stack.append(merged)
    try:
        yield
    finally:
        _scopes.stack.pop()


CustomObjectScope = custom_object_scope


@contextlib.contextmanager
def safe_mode_scope(safe_mode=True):
    """Inside the block, `in_safe_mode()` is `safe_mode`: loading a file sets it
    (Keras's SafeModeScope), so that `from_config` refuses what only a trusted
    file may ask for, such as a vocabulary file to read."""
    _scopes.safe_mode.append(bool(safe_mode))
    try:
        yield
    finally:
        _scopes.safe_mode.pop()


def in_safe_mode() -> bool | None:
    """True or False inside a `safe_mode_scope` (a `load_model`, `deserialize`...),
    None outside any (a layer built by your own code)."""
    return _scopes.safe_mode[-1] if _scopes.safe_mode else None


# loopax's own classes and functions that configs may name, by kind. Each kind
# fills its tables where its objects are defined: a package's name `Registry`
# (losses, metrics, optimizers, initializers, ...), `Layer.__init_subclass__`
# (every layer class in loopax.src), `register_builtins` next to an alias or a
# class no registry lists. An object's own name (`__name__`) wins over another
# object's alias ("accuracy": the function, not the Accuracy class); a name
# several kinds have resolves in this order ("Identity": the layer, "Hinge":
# the loss), as the scan of the public modules this replaces did.
_BUILTIN_KIND_ORDER = ("layer", "model", "initializer", "regularizer", "constraint",
                       "activation", "loss", "metric", "optimizer")
_BUILTINS: dict[str, dict[str, object]] = {kind: {} for kind in _BUILTIN_KIND_ORDER}
_BUILTIN_ALIASES: dict[str, dict[str, object]] = {kind: {} for kind in _BUILTIN_KIND_ORDER}


def register_builtins(kind: str, objects) -> None:
    """Makes loopax's own classes or functions nameable in configs.

    Args:
        kind: "layer", "loss", "metric", ... (`_BUILTIN_KIND_ORDER`; another word adds
            a kind resolved after those).
        objects: `{name: class_or_function}` (a name other than the object's own is an
            alias, such as "Convolution2D"), or an iterable of objects, named by
            `__name__`. A name already taken keeps its object.
    """
    items = objects.items() if isinstance(objects, dict) else (
        (obj.__name__, obj) for obj in objects)
    for name, obj in items:
        tables = _BUILTINS if name == getattr(obj, "__name__", None) else _BUILTIN_ALIASES
        tables.setdefault(kind, {}).setdefault(name, obj)


def builtin(name: str):
    """loopax's own class or function a config names `name`, or None."""
    for tables in (_BUILTINS, _BUILTIN_ALIASES):
        for table in tables.values():
            obj = table.get(name)
            if obj is not None:
                return obj
    return None


# Classes the loaders of other formats need by name (InputLayer, Model,
# Functional, Sequential): each registers itself here.
_CORE_CLASSES: dict[str, type] = {}


def register_core_class(cls):
    """Makes a loopax class resolvable by its name in configs (a class decorator)."""
    _CORE_CLASSES[cls.__name__] = cls
    register_builtins("model", [cls])
    return cls


def core_class(name: str) -> type:
    """A class registered with `register_core_class` (e.g. "Sequential")."""
    return _CORE_CLASSES[name]


@export("loopax.saving.get_registered_object", "loopax.utils.get_registered_object")
def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object `name` refers to, or None.

    Looked up in `custom_objects`, then the active `custom_object_scope`s (innermost
    first), then the registry of `register_serializable`, then `module_objects`.

    Args:
        name: A registered name (`"package>Name"`) or a plain one.
        custom_objects: `{name: object}` searched first, or None.
        module_objects: `{name: object}` searched last, or None.

    Returns:
        The class or function, or None when no scope has `name`.
    """
    for mapping in [custom_objects or {}] + list(reversed(_scopes.stack)):
        if name in mapping:
            return mapping[name]
    if name in _REGISTERED:
        return _REGISTERED[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


def _resolve(class_name, registered_name, custom_objects):
    for key in (registered_name, class_name):
        if key is None:
            continue
        obj = get_registered_object(key, custom_objects)
        if obj is not None:
            return obj
    # A custom class registered under "package>Name" may also be named plainly.
    for key, obj in _REGISTERED.items():
        if key.split(">", 1)[-1] == class_name:
            return obj
    return builtin(class_name)


@export(
    "loopax.saving.serialize",
    "loopax.saving.serialize_keras_object",
    "loopax.utils.serialize_keras_object",
)
def serialize(obj):
    """`{"class_name", "config"[, "registered_name", "build_config"]}` for an
    object with get_config(); a function as `{"class_name": "function",
    "config": its name}`; lists, tuples and dicts element by element; plain
    values as they are (Keras's `serialize_keras_object`).

    Args:
        obj: A loopax object (layer, model, optimizer, loss, ...), a function, a
            container of them, or a plain value.

    Returns:
        A JSON-serializable structure that `deserialize` turns back into `obj`.

    Raises:
        TypeError: an object without `get_config()`.
    """
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(serialize(item) for item in obj)
    if isinstance(obj, dict):
        return {key: serialize(value) for key, value in obj.items()}
    if hasattr(obj, "item") and getattr(obj, "shape", None) == ():   # NumPy/JAX scalars
        return obj.item()
    cls = obj if inspect.isclass(obj) or inspect.isfunction(obj) else type(obj)
    cls = getattr(cls, "_functional_base", cls)   # a Model subclass used functionally
    if inspect.isfunction(obj):
        return {"class_name": "function", "config": get_registered_name(obj)}
    if not hasattr(obj, "get_config"):
        raise TypeError(f"Cannot serialize {obj!r}: {type(obj).__name__} has no get_config().")
    entry = {"class_name": cls.__name__, "config": obj.get_config()}
    registered = _NAME_OF.get(id(cls))
    if registered is not None:
        entry["registered_name"] = registered
    build_config = obj.get_build_config() if hasattr(obj, "get_build_config") else None
    if build_config is not None:
        entry["build_config"] = build_config
    return entry


def serialize_values(value):
    """`value` (a config, a compile config) with the functions and the objects
    with `get_config()` anywhere inside it serialized, as Keras writes a config
    into a file (`serialize_keras_object` on each value); other values are
    left as they are (so a value JSON cannot hold is still named by the JSON
    error, and an unregistered function by the error that asks to register it).
    Saving only: in memory a `from_config` gets the values themselves."""
    if isinstance(value, dict):
        return {key: serialize_values(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(serialize_values(item) for item in value)
    if inspect.isfunction(value):
        if _resolve(get_registered_name(value), None, None) is value:
            return serialize(value)
        if "<" not in value.__qualname__:   # a module-level def: Keras writes its module
            warnings.warn(
                f"Saving the unregistered function {value.__module__}.{value.__qualname__} "
                "by its name, as Keras does; loading it needs custom_objects="
                f"{{{value.__name__!r}: {value.__name__}}} or @loopax.saving."
                "register_serializable() (loopax never imports modules named in a file).",
                stacklevel=2)
            return {"module": value.__module__, "class_name": "function",
                    "config": value.__name__, "registered_name": "function"}
        return value
    if not inspect.isclass(value) and hasattr(value, "get_config"):
        return serialize_values(serialize(value))
    return value


@export(
    "loopax.saving.deserialize",
    "loopax.saving.deserialize_keras_object",
    "loopax.utils.deserialize_keras_object",
)
def deserialize(config, custom_objects=None, safe_mode=True):
    """The object a `serialize()` dict describes (classes via `from_config`,
    then `build_from_config` with the saved `build_config`).

    Only loopax's own classes, registered ones and `custom_objects` are built; no
    module named in a config is imported.

    Args:
        config: A `serialize()` result (a dict, a list, or a plain value; a plain
            string is a value and comes back as it is, as in Keras).
        custom_objects: `{name: class_or_function}` for custom objects.
        safe_mode: True (the default, as Keras) refuses a config that asks to read a
            file (a lookup layer's vocabulary path); an enclosing `safe_mode_scope`
            (a `load_model(..., safe_mode=...)`) decides instead when there is one.

    Returns:
        The re-created object (new weights for layers and models).

    Raises:
        ValueError: a dict without `class_name`, or an unknown class or function.
    """
    if in_safe_mode() is None:
        with safe_mode_scope(safe_mode):
            return deserialize(config, custom_objects)
    if config is None or isinstance(config, (bool, int, float)):
        return config
    if isinstance(config, str):
        # A plain string is a value, as in Keras ("adam", "mae" in a compile
        # config stay names that compile() resolves); a function is saved as
        # {"class_name": "function", "config": its name}.
        return config
    if isinstance(config, (list, tuple)):
        return type(config)(deserialize(item, custom_objects) for item in config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Not a serialized loopax object (no 'class_name'): {quoted(config)}")
    class_name = config["class_name"]
    if class_name == "function":
        name = config["config"]
        obj = _resolve(name, None, custom_objects) if isinstance(name, str) else None
        if obj is None:
            raise ValueError(_unknown(name, custom_objects))
        return obj
    registered = config.get("registered_name")
    obj = _resolve(class_name, registered, custom_objects)
    if obj is None:
        raise ValueError(_unknown(registered or class_name, custom_objects))
    if not inspect.isclass(obj):
        return obj
    inner = config.get("config", {})
    with custom_object_scope(custom_objects or {}):
        params = inspect.signature(obj.from_config).parameters
        if "custom_objects" in params:
            instance = obj.from_config(inner, custom_objects=custom_objects)
        else:
            instance = obj.from_config(inner)
        build_config = config.get("build_config")
        if build_config and hasattr(instance, "build_from_config") and \
                not getattr(instance, "built", False):
            instance.build_from_config(build_config)
    return instance


def _unknown(name, custom_objects) -> str:
    known = sorted(set(_REGISTERED) | set(custom_objects or {}))
    return (f"Unknown class or function {quoted(name)} in a config. loopax re-creates only "
            "its own classes and those you pass as `custom_objects={name: cls}` or "
            "register with `@loopax.saving.register_serializable()`; it never imports "
            f"modules named in a file. Registered custom objects: {known}.")


# Keras names.
register_keras_serializable = register_serializable
serialize_keras_object = serialize
deserialize_keras_object = deserialize
