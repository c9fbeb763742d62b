"""Names for the Variables holding an optax state's leaves.

`build()` initialises the transformation on an `OrderedDict` of parameters
keyed by variable path (`"dense_kernel"`), so a leaf's key path says which
variable it belongs to and which state field holds it:
`(SequenceKey(0), GetAttrKey("mu"), DictKey("dense_kernel"))` becomes
`dense_kernel_mu` (Keras's `<variable>_<slot>` form).
"""

import collections
from collections.abc import Sequence
from typing import Any

import jax


def unique_keys(keys: Sequence[str]) -> list[str]:
    """`keys` with repeats suffixed `_1`, `_2`, ... (order kept)."""
    seen: collections.Counter[str] = collections.Counter()
    out = []
    for k in keys:
        out.append(k if seen[k] == 0 else f"{k}_{seen[k]}")
        seen[k] += 1
    return out


def slot_names(keypaths: Any, variable_keys: Any, aliases: Any) -> Any:
    """Readable, unique names for the leaves of an optax state.

    A leaf under a parameter key `k` gets `k_<field>` (`dense_kernel_mu`),
    others `<field>` (`count`). Names start from the innermost field and grow
    outwards only as far as needed to be unique.
    """
    def parts(path):
        var_key, fields, all_fields = None, [], []
        for entry in path:
            if isinstance(entry, jax.tree_util.DictKey) and entry.key in variable_keys:
                var_key = entry.key
                continue
            if isinstance(entry, jax.tree_util.SequenceKey):
                all_fields.append(str(entry.idx))
                continue
            name = getattr(entry, "name", None) or str(getattr(entry, "key", entry))
            fields.append(aliases.get(name, name))
            all_fields.append(fields[-1])
        return var_key, fields or ["state"], all_fields or ["state"]

    decomposed = [parts(p) for p in keypaths]

    def name_at(i, depth):
        var_key, fields, all_fields = decomposed[i]
        field = "_".join(fields[-depth:]) if depth <= len(fields) else "_".join(all_fields)
        return f"{var_key}_{field}" if var_key is not None else field

    depth = [1] * len(keypaths)
    for _ in range(max((len(d[2]) for d in decomposed), default=0) + 1):
        names = [name_at(i, depth[i]) for i in range(len(keypaths))]
        counts = collections.Counter(names)
        clashing = [i for i, n in enumerate(names) if counts[n] > 1]
        if not clashing:
            return names
        for i in clashing:
            depth[i] += 1
    return unique_keys([name_at(i, depth[i]) for i in range(len(keypaths))])
