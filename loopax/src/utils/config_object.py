"""`Config`: a dict of named settings read and written as attributes, which can be
frozen and written as JSON (Keras's `keras.utils.Config`)."""

import difflib
import json
import warnings

from loopax.src.api_export import export

_OWN_ATTRIBUTES = ("_values", "_frozen")


@export("loopax.utils.Config")
class Config:
    """Named values, as attributes (`config.seed`) or items (`config["seed"]`).

    `freeze()` makes every change raise (a ValueError) until `unfreeze()`; `as_dict()`
    and `to_json()` export the values. Iterating yields the names in sorted order.

    Args:
        **values: The first settings, by name.
    """

    def __init__(self, **values):
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_frozen", False)

    @property
    def frozen(self) -> bool:
        """Whether changes are refused."""
        return self._frozen

    def freeze(self) -> None:
        """Refuses every change from now on (until `unfreeze`)."""
        object.__setattr__(self, "_frozen", True)

    def unfreeze(self) -> None:
        """Allows changes again."""
        object.__setattr__(self, "_frozen", False)

    def _check_not_frozen(self):
        if self._frozen:
            raise ValueError("Cannot mutate attribute(s) because the config is frozen. "
                             "Call config.unfreeze() first.")

    def as_dict(self) -> dict:
        """A shallow copy of the values, as a dict."""
        return dict(self._values)

    def to_json(self) -> str:
        """The values as a JSON string."""
        return json.dumps(self._values)

    def keys(self):
        return self._values.keys()

    def values(self):
        return self._values.values()

    def items(self):
        return self._values.items()

    def get(self, name, default=None):
        return self._values.get(name, default)

    def pop(self, *args):
        self._check_not_frozen()
        return self._values.pop(*args)

    def update(self, *args, **kwargs):
        self._check_not_frozen()
        self._values.update(*args, **kwargs)

    def __getattr__(self, name):
        if name in _OWN_ATTRIBUTES or name.startswith("__"):
            raise AttributeError(name)
        values = self._values
        if name in values:
            return values[name]
        message = f"Unknown attribute: '{name}'."
        close = difflib.get_close_matches(name, list(values), n=1, cutoff=0.7)
        if close:
            message += f" Did you mean '{close[0]}'?"
        raise AttributeError(message)

    def __setattr__(self, name, value):
        if hasattr(type(self), name):   # Keras replaces the method; say so
            warnings.warn(f"Config: setting {name!r} replaces Config's own {name!r} on this "
                          f"object and is not stored as a value; use config[{name!r}] = ... "
                          "to store it.", stacklevel=2)
            object.__setattr__(self, name, value)
            return
        self[name] = value

    def __setitem__(self, name, value):
        self._check_not_frozen()
        self._values[name] = value

    def __getitem__(self, name):
        return self._values[name]

    def __delitem__(self, name):
        self._check_not_frozen()
        del self._values[name]

    def __contains__(self, name):
        return name in self._values

    def __iter__(self):
        return iter(sorted(self._values))

    def __len__(self):
        return len(self._values)

    def __repr__(self):
        return f"<Config {self._values}>"
