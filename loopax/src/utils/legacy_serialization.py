"""Keras 2's serialization format (`keras.legacy.saving`, `keras.utils.legacy`):
`{"class_name": ..., "config": ...}` with no module names, nested objects marked
`"__passive_serialization__"`, functions as their names. Reading never imports a
module: names resolve through `module_objects`, `custom_objects`, the active
`custom_object_scope`s and the registry only.
"""

import inspect

from loopax.src import serialization
from loopax.src.api_export import export

_PASSIVE = "__passive_serialization__"


@export("loopax.utils.legacy.serialize_keras_object", "loopax.legacy.saving.serialize_keras_object")
def serialize_keras_object(instance):
    """An object in Keras 2's format.

    Args:
        instance: An object with `get_config()`, a function or class (saved by
            name), or None.

    Returns:
        `{"class_name", "config"}` (config values that are objects nested the same
        way, marked `"__passive_serialization__": True`), a name, or None.

    Raises:
        ValueError: `instance` has no `get_config()` and no name.
    """
    instance = inspect.unwrap(instance) if callable(instance) else instance
    if instance is None:
        return None
    if hasattr(instance, "get_config") and not isinstance(instance, type):
        config = {key: _serialize_item(value) for key, value in instance.get_config().items()}
        return {"class_name": serialization.get_registered_name(type(instance)),
                "config": config}
    if hasattr(instance, "__name__"):
        return serialization.get_registered_name(instance)
    raise ValueError(f"Cannot serialize {instance!r} because it doesn't implement "
                     "`get_config()`.")


def _serialize_item(value):
    if isinstance(value, (str, dict)):
        return value
    try:
        serialized = serialize_keras_object(value)
    except ValueError:   # plain values (numbers, lists) stay as they are
        return value
    if isinstance(serialized, dict):
        serialized[_PASSIVE] = True
    return serialized


@export(
    "loopax.utils.legacy.deserialize_keras_object",
    "loopax.legacy.saving.deserialize_keras_object",
)
def deserialize_keras_object(identifier, module_objects=None, custom_objects=None,
                             printable_module_name="object"):
    """The object a Keras 2 serialized form describes.

    Args:
        identifier: `{"class_name", "config"}`, a name, a function, or None.
        module_objects: `{name: class or function}` to look names up in (Keras's
            built-ins are not searched: pass them here).
        custom_objects: `{name: class or function}` searched first.
        printable_module_name: What the object is, for error messages.

    Returns:
        The object: a dict is built with `cls.from_config`; a name gives its function,
        or an instance of its class.

    Raises:
        ValueError: a name that no mapping holds, or a form that is neither.
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        cls, config = _class_and_config(identifier, module_objects, custom_objects,
                                        printable_module_name)
        with serialization.custom_object_scope(custom_objects or {}):
            return cls.from_config(config)
    if isinstance(identifier, str):
        obj = _lookup(identifier, module_objects, custom_objects, printable_module_name)
        return obj() if inspect.isclass(obj) else obj
    if inspect.isfunction(identifier):
        return identifier
    raise ValueError(f"Could not interpret serialized {printable_module_name}: {identifier}")


def _lookup(name, module_objects, custom_objects, printable_module_name):
    obj = serialization.get_registered_object(name, custom_objects, module_objects)
    if obj is None:
        raise ValueError(
            f"Unknown {printable_module_name}: '{name}'. Please ensure you are using a "
            "`loopax.utils.custom_object_scope` and that this object is included in the "
            "scope, or pass it in `custom_objects` / `module_objects`.")
    return obj


def _class_and_config(identifier, module_objects, custom_objects, printable_module_name):
    if "class_name" not in identifier or "config" not in identifier:
        raise ValueError(f"Improper config format for {identifier}. Expecting python dict "
                         "contains `class_name` and `config` as keys")
    cls = _lookup(identifier["class_name"], module_objects, custom_objects,
                  printable_module_name)
    config = identifier["config"]
    if isinstance(config, list):
        return cls, config
    config = dict(config)
    for key, item in config.items():
        if key == "name":
            continue
        if isinstance(item, dict) and _PASSIVE in item:
            config[key] = deserialize_keras_object(item, module_objects, custom_objects,
                                                   "config_item")
        elif isinstance(item, str):
            found = serialization.get_registered_object(item, custom_objects, module_objects)
            if inspect.isfunction(found):
                config[key] = found
    return cls, config
