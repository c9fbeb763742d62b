"""Names and paths: the name-scope stack behind every `Variable.path`, and the
session's automatic names (`dense`, `dense_1`, ...; `get_uid`, `clear_session`).

Keras's rule: a layer's call, build and `add_weight` run inside its name scope, so a
variable's path is the names of the layers around it, then its own
(`sequential/d3/kernel`).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from loopax.src.api_export import export


class _NameStack(threading.local):
    def __init__(self):
        self.stack: list[_Scope] = []


_names = _NameStack()


class _Scope:
    """One entry of the name-scope stack: a name, the object that opened it (or None)
    and, for a layer whose place is settled, the absolute path of its parent."""

    __slots__ = ("name", "caller", "parent")

    def __init__(self, name, caller, parent):
        self.name, self.caller, self.parent = name, caller, parent


def current_path() -> str:
    """The path the open name scopes give (`"sequential/d3"`), `""` outside any.

    A scope opened for a layer whose place is settled (`Layer.path`) starts from that
    place, not from the scopes around it, as Keras's name scopes do."""
    parts: list[str] = []
    for scope in _names.stack:
        if scope.parent is not None:
            parts = [p for p in scope.parent.split("/") if p]
        parts.append(scope.name)
    return "/".join(parts)


@contextlib.contextmanager
def name_scope(name: str, caller: Any = None) -> Iterator[None]:
    """Prefixes the `path` of Variables created inside with `name/`.

    The one stack behind every path: a layer's call, build and `add_weight` open its
    scope (`name_scope(layer.name, caller=layer)`), so its variables' paths are its
    parents' names, then its own, then the variable's (`sequential/d3/kernel`), as in
    Keras. A scope `caller` opens right inside one it opened already adds nothing, and a
    caller with a settled place (`_parent_path`) starts from there.

    Args:
        name: The scope's name (a path component, no `/`).
        caller: The object opening it (a layer, optimizer or metric), or None.

    Yields:
        Nothing; the prefix holds inside the `with` block.

    Raises:
        ValueError: `name` is not a string or contains `/`.
    """
    if not isinstance(name, str) or "/" in name:
        raise ValueError(f"name_scope: `name` must be a string without '/', got {name!r}.")
    stack = _names.stack
    if caller is not None and stack and stack[-1].caller is caller and stack[-1].name == name:
        yield
        return
    parent = getattr(caller, "__dict__", {}).get("_parent_path") if caller is not None else None
    stack.append(_Scope(name, caller, parent))
    try:
        yield
    finally:
        stack.pop()


_name_counts: dict[str, int] = {}


def unique_name(prefix: str) -> str:
    """`prefix`, then `prefix_1`, `prefix_2`, ... (reset by `clear_session`).

    Args:
        prefix: The base name, such as `"dense"`.

    Returns:
        A name not handed out before in this session.
    """
    n = _name_counts.get(prefix, 0)
    _name_counts[prefix] = n + 1
    return prefix if n == 0 else f"{prefix}_{n}"


@export("loopax.backend.get_uid")
def get_uid(prefix: str = "") -> int:
    """Counts the names handed out for `prefix`: 1 the first call, then 2, ... (shared
    with automatic layer names, as Keras's `backend.get_uid`; reset by `clear_session`).

    Args:
        prefix: The name's base, such as `"dense"`.

    Returns:
        The new count, an int.
    """
    _name_counts[prefix] = _name_counts.get(prefix, 0) + 1
    return _name_counts[prefix]


@export("loopax.backend.clear_session", "loopax.utils.clear_session")
def clear_session() -> None:
    """Resets automatic layer names (`dense`, `dense_1`, ... start again)."""
    _name_counts.clear()
