"""`loopax.tree`: Keras's `keras.tree` on nested Python structures.

The nodes are Python's containers, as Keras (optree, `none_is_leaf=True`)
has them: `list`, `tuple`, namedtuples, `dict` and `defaultdict` (values in
sorted-key order; keys of several types sorted by type name first, keys that
do not sort in insertion order), `OrderedDict` (in its own order) and `deque`.
Everything else is a leaf: `None`, strings, arrays, loopax Variables and
Tensors, and any JAX-registered pytree (Keras does not look inside those
either; use `jax.tree_util` for them).
"""

from __future__ import annotations

import collections
import warnings

from loopax.src.api_export import export


@export("loopax.tree.MAP_TO_NONE")
class MAP_TO_NONE:
    """Returned by `traverse`'s `func`: replace that sub-structure with None."""


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


@export("loopax.tree.is_nested")
def is_nested(structure) -> bool:
    """Whether `structure` is a container node (list, tuple, namedtuple, dict, deque).

    Args:
        structure: Anything.

    Returns:
        True for a container, False for a leaf (None and strings included).
    """
    return type(structure) in (list, tuple, dict, collections.OrderedDict,
                               collections.defaultdict, collections.deque) or \
        _is_namedtuple(structure)


def _keys(node):
    """The child keys of a node, in flattening order."""
    if isinstance(node, dict):
        if type(node) is dict or type(node) is collections.defaultdict:
            return _sorted_keys(node)
        return list(node)
    return list(range(len(node)))


def _sorted_keys(mapping):
    """Sorted keys; keys of several types sort by type name first, and keys that do
    not sort at all keep their order (optree's total order)."""
    try:
        return sorted(mapping)
    except TypeError:
        pass
    try:
        return sorted(mapping, key=lambda k: (f"{type(k).__module__}.{type(k).__qualname__}", k))
    except TypeError:
        return list(mapping)


def _children(node):
    return [node[key] for key in _keys(node)]


def _rebuild(node, children):
    """A node like `node` holding `children` (given in flattening order)."""
    if isinstance(node, dict):
        by_key = dict(zip(_keys(node), children))
        pairs = [(key, by_key[key]) for key in node]   # the original key order
        if type(node) is collections.defaultdict:
            return collections.defaultdict(node.default_factory, pairs)
        return type(node)(pairs)
    if _is_namedtuple(node):
        return type(node)(*children)
    if type(node) is collections.deque:
        return collections.deque(children, maxlen=node.maxlen)
    return type(node)(children)


def _is_leaf(x, none_is_leaf=True):
    return not is_nested(x) and (none_is_leaf or x is not None)


def _mismatch(expected, got):
    return ValueError(f"The structures don't have the same nested structure: expected "
                      f"{_describe(expected)}, got {_describe(got)} ({got!r:.80}).")


def _describe(node):
    if node is None:
        return "None"
    if isinstance(node, dict):
        return f"a mapping with keys {sorted(map(repr, node))}"
    if is_nested(node):
        return f"a {type(node).__name__} of length {len(node)}"
    return "a leaf"


def _same_node(a, b):
    """Whether `b` is a node of `a`'s kind (dict-likes alike, same keys)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and is_nested(b) and set(a) == set(b)
    return type(a) is type(b) and len(a) == len(b)


def _aligned_children(first, other):
    """`other`'s children in `first`'s flattening order (dicts matched by key)."""
    if not _same_node(first, other):
        raise _mismatch(first, other)
    return [other[key] for key in _keys(first)]


@export("loopax.tree.flatten")
def flatten(structure) -> list:
    """The leaves of `structure`, in order.

    Args:
        structure: A nested structure (a leaf alone gives `[leaf]`; `flatten(None)` is
            `[None]`).

    Returns:
        A list of the leaves (dict values in sorted-key order).
    """
    if not is_nested(structure):
        return [structure]
    return [leaf for child in _children(structure) for leaf in flatten(child)]


@export("loopax.tree.flatten_with_path")
def flatten_with_path(structure) -> list:
    """The leaves of `structure` with their paths.

    Args:
        structure: A nested structure.

    Returns:
        A list of `(path, leaf)`; a path is the tuple of keys/indices down to the leaf
        (namedtuples by index, as Keras), `()` for a lone leaf.
    """
    if not is_nested(structure):
        return [((), structure)]
    return [((key,) + path, leaf) for key in _keys(structure)
            for path, leaf in flatten_with_path(structure[key])]


@export("loopax.tree.map_structure")
def map_structure(func, *structures, none_is_leaf=True):
    """`func` applied to the leaves of `structures` (same layout), in the first's layout.

    Args:
        func: A callable taking one argument per structure.
        *structures: Structures of the same layout (dict-likes match by keys).
        none_is_leaf: False leaves `None` entries as None without calling `func`.

    Returns:
        A structure laid out as the first one, holding `func`'s results.

    Raises:
        TypeError: no structure is given, or `func` is not callable.
        ValueError: the structures' layouts differ.
    """
    if not callable(func):
        raise TypeError(f"map_structure: `func` must be callable, got {func!r}.")
    if not structures:
        raise TypeError("map_structure: pass at least one structure.")
    first, *others = structures
    if first is None and not none_is_leaf:
        for other in others:
            if other is not None:
                raise _mismatch(first, other)
        return None
    if _is_leaf(first):
        for other in others:
            if is_nested(other):
                raise _mismatch(first, other)
        return func(*structures)
    columns = [_children(first)] + [_aligned_children(first, other) for other in others]
    return _rebuild(first, [map_structure(func, *row, none_is_leaf=none_is_leaf)
                            for row in zip(*columns)])


@export("loopax.tree.map_structure_up_to")
def map_structure_up_to(shallow_structure, func, *structures):
    """`func` applied to the sub-structures of `structures` found at the leaves of
    `shallow_structure` (None leaves included).

    Args:
        shallow_structure: The layout to map over; its leaves' values are not used.
        func: A callable taking one argument per structure.
        *structures: Structures at least as deep as `shallow_structure`.

    Returns:
        A structure laid out as `shallow_structure`, holding `func`'s results.

    Raises:
        TypeError: no structure is given.
        ValueError: a structure is shallower than `shallow_structure` or laid out
            otherwise.
    """
    if not structures:
        raise TypeError("map_structure_up_to: pass at least one structure.")
    if not is_nested(shallow_structure):
        return func(*structures)
    columns = [_aligned_children(shallow_structure, s) for s in structures]
    return _rebuild(shallow_structure, [
        map_structure_up_to(shallow, func, *row)
        for shallow, *row in zip(_children(shallow_structure), *columns)])


@export("loopax.tree.assert_same_structure")
def assert_same_structure(a, b, check_types=None) -> None:
    """Raises a ValueError unless `a` and `b` are nested alike (list, tuple and each
    namedtuple type differ; dict-likes with the same keys match).

    Args:
        a: A structure.
        b: A structure.
        check_types: Deprecated in Keras and ignored (a warning says so).
    """
    if check_types is not None:
        warnings.warn("assert_same_structure: `check_types` has no effect; for a looser "
                      "check use `loopax.tree.assert_same_paths`.", DeprecationWarning,
                      stacklevel=2)
    map_structure(lambda *_: None, a, b)


@export("loopax.tree.assert_same_paths")
def assert_same_paths(a, b) -> None:
    """Raises a ValueError (listing the differing paths) unless `a` and `b` have the
    same leaf paths, whatever their container types.

    Args:
        a: A structure.
        b: A structure.
    """
    a_paths = {path for path, _ in flatten_with_path(a)}
    b_paths = {path for path, _ in flatten_with_path(b)}
    if a_paths != b_paths:
        message = "`a` and `b` don't have the same paths."
        if a_paths - b_paths:
            message += f"\nPaths in `a` missing in `b`:\n{a_paths - b_paths}"
        if b_paths - a_paths:
            message += f"\nPaths in `b` missing in `a`:\n{b_paths - a_paths}"
        raise ValueError(message)


@export("loopax.tree.pack_sequence_as")
def pack_sequence_as(structure, flat_sequence):
    """`flat_sequence`'s items in `structure`'s layout (the inverse of `flatten`).

    Args:
        structure: The layout (its leaves' values are not used).
        flat_sequence: One item per leaf of `structure`, in `flatten` order.

    Returns:
        The new structure (dicts keep `structure`'s key order).

    Raises:
        TypeError: `flat_sequence` is not iterable.
        ValueError: it has more or fewer items than `structure` has leaves.
    """
    try:
        items = list(flat_sequence)
    except TypeError:
        raise TypeError("pack_sequence_as: `flat_sequence` must be a sequence, got "
                        f"{type(flat_sequence).__name__}.") from None
    expected = len(flatten(structure))
    if len(items) != expected:
        raise ValueError(f"pack_sequence_as: the structure has {expected} leaves but "
                         f"`flat_sequence` has {len(items)} items.")
    remaining = iter(items)

    def pack(node):
        if not is_nested(node):
            return next(remaining)
        return _rebuild(node, [pack(child) for child in _children(node)])

    return pack(structure)


@export("loopax.tree.traverse")
def traverse(func, structure, top_down=True):
    """Applies `func` to every sub-structure, depth first.

    Top down, a non-None result replaces that sub-structure (and stops the descent
    into it); bottom up, a non-None result replaces it after its children were
    traversed. `MAP_TO_NONE` as a result means None.

    Args:
        func: A callable of one sub-structure.
        structure: The structure to traverse.
        top_down: Whether parents are visited before their children (default True).

    Returns:
        The structure with the replacements made.

    Raises:
        TypeError: `func` is not callable.
    """
    if not callable(func):
        raise TypeError(f"traverse: `func` must be callable, got {func!r}.")

    def children_traversed(node):
        if not is_nested(node):
            return node
        return _rebuild(node, [traverse(func, child, top_down) for child in _children(node)])

    if top_down:
        result = func(structure)
        if result is None:
            return children_traversed(structure)
    else:
        structure = children_traversed(structure)
        result = func(structure)
        if result is None:
            return structure
    return None if result is MAP_TO_NONE else result


@export("loopax.tree.lists_to_tuples")
def lists_to_tuples(structure):
    """`structure` with every list turned into a tuple.

    Args:
        structure: A nested structure.

    Returns:
        The same structure with tuples in place of lists.
    """
    return traverse(lambda node: tuple(node) if isinstance(node, list) else None, structure,
                    top_down=False)


def _is_shape(x):
    return isinstance(x, (list, tuple)) and all(isinstance(e, (int, type(None))) for e in x)


@export("loopax.tree.map_shape_structure")
def map_shape_structure(func, structure):
    """`map_structure` where lists/tuples of ints and Nones (shapes) are leaves.

    Args:
        func: A callable of one shape (or other leaf).
        structure: A nested structure of shapes.

    Returns:
        The structure with `func`'s results in place of the shapes.
    """
    if _is_shape(structure) or not is_nested(structure):
        return func(structure)
    return _rebuild(structure, [map_shape_structure(func, child)
                                for child in _children(structure)])
