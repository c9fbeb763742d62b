"""`SymbolicScope`: marks code that runs on symbolic tensors only (Keras's
`keras.SymbolicScope`, entered while a layer's output shapes are worked out).
"""

import threading

_current = threading.local()


class SymbolicScope:
    """A `with` block inside which `in_symbolic_scope()` is True."""

    def __enter__(self):
        self._outer = getattr(_current, "scope", None)
        _current.scope = self
        return self

    def __exit__(self, *exc_info):
        _current.scope = self._outer


def in_symbolic_scope() -> bool:
    """Whether a `SymbolicScope` is open in this thread."""
    return getattr(_current, "scope", None) is not None
