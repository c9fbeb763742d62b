"""`LayoutMap`: variable paths (or regexes over them) -> `TensorLayout`."""

from __future__ import annotations

import collections
import re

from loopax.src.api_export import export
from loopax.src.distribution.device_mesh import TensorLayout, check_axes_exist


@export("loopax.distribution.LayoutMap")
class LayoutMap(collections.abc.MutableMapping):
    """Maps variable paths to layouts, as a dict whose keys are also regexes.

    `layout_map["dense.*kernel"] = (None, "model")` splits the last dimension
    of every kernel whose path fully matches `dense.*kernel` ("dense/kernel",
    "dense_1/kernel") over the mesh axis "model". A lookup tries the exact
    key first, then every key as a regex (`re.fullmatch`); more than one match
    is an error, none gives None (the variable is replicated).

    Args:
        device_mesh: the `DeviceMesh` the layouts refer to.
    """

    def __init__(self, device_mesh):
        self._layouts: dict[str, TensorLayout] = collections.OrderedDict()
        self._device_mesh = device_mesh
        self.warned_unmatched = set()   # (model name, key) warned about as matching nothing

    @property
    def device_mesh(self):
        return self._device_mesh

    def __setitem__(self, key, layout):
        if not isinstance(key, str):
            raise TypeError(f"LayoutMap keys are variable paths or regexes (str), got "
                            f"{type(key).__name__}.")
        if key in self._layouts:
            raise ValueError(f"LayoutMap: {key!r} is already mapped to "
                             f"{self._layouts[key].axes}.")
        try:
            re.compile(key)
        except re.error as e:
            raise ValueError(f"LayoutMap: key {key!r} is not a valid regex ({e}).") from None
        if isinstance(layout, (tuple, list)):
            layout = TensorLayout(tuple(layout))
        if not isinstance(layout, TensorLayout):
            raise TypeError(f"LayoutMap[{key!r}]: a layout is a tuple of mesh axis names / "
                            f"None, or a TensorLayout; got {type(layout).__name__}.")
        if layout.device_mesh is None and self._device_mesh is not None:
            layout = TensorLayout(layout.axes)
            layout._device_mesh = self._device_mesh
        check_axes_exist(layout, f"LayoutMap[{key!r}]")
        self._layouts[key] = layout

    def __getitem__(self, key):
        return self.get(key)

    def get(self, key, default=None):
        """The layout for path `key` (exact key, else the one matching regex), or
        `default`."""
        found = self.matching_key(key)
        return default if found is None else self._layouts[found]

    def matching_key(self, path: str):
        """The key that `path` selects, or None; an error if several match."""
        if path in self._layouts:
            return path
        matches = [k for k in self._layouts if re.fullmatch(k, path)]
        if len(matches) > 1:
            raise ValueError(
                f"LayoutMap: variable path {path!r} matches several keys {matches}; make "
                "each path match at most one key.")
        return matches[0] if matches else None

    def unmatched_keys(self, paths) -> list[str]:
        """The keys that select none of `paths`."""
        paths = list(paths)
        return [k for k in self._layouts
                if k not in paths and not any(re.fullmatch(k, p) for p in paths)]

    def __delitem__(self, key):
        del self._layouts[key]

    def __len__(self):
        return len(self._layouts)

    def __iter__(self):
        return iter(self._layouts)

    def __repr__(self):
        body = ", ".join(f"{k!r}: {v.axes}" for k, v in self._layouts.items())
        return f"<LayoutMap {{{body}}} on {self._device_mesh}>"
