"""`rearrange`: einops-style reshapes and transposes in one pattern (`keras.ops.rearrange`)."""

from __future__ import annotations

import math
import re

import jax.numpy as jnp

from loopax.src.array_types import Array, ArrayLike
from loopax.src.ops.utils import as_array
from loopax.src.tensor import op

_TOKEN = re.compile(r"\(([^()]*)\)|(\w+)|(\S)")


def _groups(side, pattern):
    """`"b (h w) c"` -> `[["b"], ["h", "w"], ["c"]]`."""
    groups = []
    for inner, name, other in _TOKEN.findall(side):
        if other:
            raise ValueError(f"rearrange: {other!r} in pattern {pattern!r} is not supported; "
                             f"use names and parenthesized groups, e.g. 'b (h w) c -> b h w c'.")
        groups.append(inner.split() if inner or not name else [name])
    return groups


def _axis_lengths(groups, shape, known, pattern):
    """Every input name's length: a group's product is its axis; one name per
    group may be left for the division to give."""
    if len(groups) != len(shape):
        raise ValueError(f"rearrange: the input side of {pattern!r} names {len(groups)} axes; "
                         f"the tensor has shape {tuple(shape)}.")
    lengths = {}
    for group, size in zip(groups, shape):
        unknown = [name for name in group if name not in known]
        if len(unknown) > 1:
            raise ValueError(f"rearrange: give the lengths of all but one of {unknown} in "
                             f"{pattern!r} (e.g. {unknown[0]}=...).")
        product = math.prod(known[name] for name in group if name in known)
        if unknown:
            lengths[unknown[0]] = size // product
        if size != product * (lengths[unknown[0]] if unknown else 1):
            raise ValueError(f"rearrange: the axis ({' '.join(group)}) of {pattern!r} has "
                             f"length {size}, not a multiple of {product}.")
        lengths.update({name: known[name] for name in group if name in known})
    return lengths


@op
def rearrange(tensor: ArrayLike, pattern: str, **axes_lengths: int) -> Array:
    """Splits, merges and permutes axes as an einops pattern says, e.g.
    `"b (h p1) (w p2) c -> b (h w) (p1 p2 c)"` with `p1=4, p2=4` (image patches).

    Args:
        tensor: The array.
        pattern: `"input axes -> output axes"`: names, and parenthesized groups
            that are one axis of the product of their lengths; both sides name
            the same axes.
        **axes_lengths: Lengths of names inside input groups (one per group
            may be omitted and is inferred).

    Returns:
        The rearranged array.

    Raises:
        ValueError: the pattern is malformed, its sides name different axes, or
            it does not fit the tensor's shape.
    """
    tensor = as_array(tensor)
    if pattern.count("->") != 1:
        raise ValueError(f"rearrange: the pattern must be 'input -> output', got {pattern!r}.")
    source, target = (_groups(side, pattern) for side in pattern.split("->"))
    flat_source = [name for group in source for name in group]
    flat_target = [name for group in target for name in group]
    if sorted(flat_source) != sorted(flat_target) or len(set(flat_source)) != len(flat_source):
        raise ValueError(f"rearrange: both sides of {pattern!r} must name the same axes, each "
                         f"once; input {flat_source}, output {flat_target}.")
    lengths = _axis_lengths(source, tensor.shape, dict(axes_lengths), pattern)
    split = tensor.reshape([lengths[name] for name in flat_source])
    permuted = jnp.transpose(split, [flat_source.index(name) for name in flat_target])
    return permuted.reshape([math.prod(lengths[name] for name in group) for group in target])


__all__ = ["rearrange"]
