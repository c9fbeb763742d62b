"""The identifier rules behind `get` / `serialize` / `deserialize` of
activations, initializers, regularizers, constraints, losses, metrics,
optimizers and learning-rate schedules (Keras's rules, written once).

A name resolves through `serialization.get_registered_object`:
`custom_objects`, an active `custom_object_scope` and
`@register_serializable` names first, then the module's own table. An
unknown name is a ValueError listing the valid names and the closest ones.
"""

from __future__ import annotations

import difflib
import inspect

from loopax.src import serialization
from loopax.src.module import _snake_case


def name_table(objects, aliases=None) -> dict:
    """`{name: object}`: classes under their name and its snake_case form
    ("MaxNorm", "max_norm"), functions under their name, then `aliases`."""
    table = {}
    for obj in objects:
        table[obj.__name__] = obj
        if inspect.isclass(obj):
            table[_snake_case(obj.__name__)] = obj
    table.update(aliases or {})
    return table


class Registry:
    """The built-in names of one kind of object and Keras's rules for them.

    Args:
        kind: the word error messages use ("constraint", "loss", ...).
        objects: `{name: class or function}`; kept, not copied.
        base: the class instances have; a class identifier must subclass it.
        unlisted: names accepted but not listed in the unknown-name error.
        accepts: what else can be passed, for error messages.
        ignore_case: names also match in any letter case ("ADAM" -> Adam).
    """

    def __init__(self, kind, objects, base=None, unlisted=(), accepts="a callable",
                 ignore_case=False):
        self.kind, self.objects, self.base = kind, objects, base
        self.unlisted, self.accepts, self.ignore_case = set(unlisted), accepts, ignore_case
        # Nameable in any config too (`serialization.deserialize`).
        serialization.register_builtins(kind, objects)
        if base is not None:
            serialization.register_builtins(kind, [base])

    def lookup(self, name, custom_objects=None):
        """The class or function `name` stands for; ValueError if none."""
        obj = serialization.get_registered_object(name, custom_objects, self.objects)
        if obj is None and self.ignore_case:
            lowered = {key.lower(): value
                       for key, value in {**self.objects, **(custom_objects or {})}.items()}
            obj = lowered.get(name.lower())
        if obj is None:
            raise self.unknown(name)
        return obj

    def unknown(self, name) -> ValueError:
        names = sorted({n.lower() if self.ignore_case else n
                        for n in self.objects if n not in self.unlisted})
        close = difflib.get_close_matches(str(name), names, n=3)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        return ValueError(f"Unknown {self.kind} {name!r}.{hint} Valid names: "
                          f"{', '.join(names)}; or pass {self.accepts}.")

    def get(self, identifier, custom_objects=None):
        """None and instances as they are; a name or class gives a default
        instance (or the function a name stands for); a config dict goes
        through `deserialize`; other callables come back unchanged."""
        if identifier is None or (self.base and isinstance(identifier, self.base)):
            return identifier
        if isinstance(identifier, dict):
            return self.deserialize(identifier, custom_objects)
        obj = self.lookup(identifier, custom_objects) if isinstance(identifier, str) else identifier
        if inspect.isclass(obj):
            if self.base and not issubclass(obj, self.base):
                raise ValueError(f"Could not interpret {self.kind} {identifier!r}: a class "
                                 f"must subclass {self.base.__name__}.")
            return obj()
        if callable(obj):
            return obj
        raise ValueError(f"Could not interpret {self.kind} {identifier!r}: expected a name, "
                         f"a config dict, or {self.accepts}.")

    def serialize(self, obj):
        """`{"class_name", "config"}` for an instance of `base`, the name of a
        built-in function; anything else comes back unchanged."""
        if self.base and isinstance(obj, self.base):
            return serialization.serialize(obj)
        if not inspect.isclass(obj):
            for name, known in self.objects.items():
                if known is obj:
                    return name
            if serialization.is_registered(obj):   # @register_serializable function
                return serialization.serialize(obj)
        return obj

    def deserialize(self, config, custom_objects=None):
        """The object a `serialize()` result (dict or name) describes."""
        if not isinstance(config, dict):
            return self.get(config, custom_objects)
        if "class_name" not in config:
            raise ValueError(f"A serialized {self.kind} needs a 'class_name': {config!r:.200}")
        if config["class_name"] == "function":   # a registered or built-in function
            return self.lookup(config["config"], custom_objects)
        obj = self.lookup(config.get("registered_name") or config["class_name"], custom_objects)
        if not inspect.isclass(obj):
            return obj
        inner = config.get("config", {})
        if not hasattr(obj, "from_config"):
            return obj(**inner)
        if "custom_objects" in inspect.signature(obj.from_config).parameters:
            return obj.from_config(inner, custom_objects=custom_objects)
        return obj.from_config(inner)
