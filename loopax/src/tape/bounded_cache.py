"""A size-bounded cache that forgets the least recently used entry first.

The tape keeps its compiled pieces (jitted ops, layer-call plans, gradient
functions) in these, keyed by program structure, so a loop that keeps
producing new structures does not grow memory without bound.
"""

from __future__ import annotations

import collections
from typing import Any, Hashable


class BoundedCache:
    """At most `size` entries; `get` and `put` mark an entry as recently used."""

    def __init__(self, size: int = 256):
        self.size = size
        self._entries: collections.OrderedDict = collections.OrderedDict()

    def get(self, key: Hashable) -> Any:
        """The value under `key`, or None."""
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> Any:
        """Stores `value` under `key` (evicting the oldest entry when full); returns it."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
