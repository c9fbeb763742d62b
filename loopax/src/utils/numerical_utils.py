"""Label and array helpers: `to_categorical`, `normalize`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export
from loopax.src.ops import nn as ops_nn


@export("loopax.utils.to_categorical")
def to_categorical(x, num_classes=None):
    """One-hot encodes integer class labels.

    Args:
        x: integer labels of shape `(...)` (a trailing axis of size 1 is dropped).
        num_classes: the number of classes; default `max(x) + 1`.

    Returns:
        float32 array of shape `(..., num_classes)`: NumPy for NumPy/list input,
        JAX for a JAX array.
    """
    if isinstance(x, jax.Array):
        if num_classes is None:
            num_classes = int(jnp.max(x)) + 1
        if x.ndim > 1 and x.shape[-1] == 1:
            x = x[..., 0]
        return jax.nn.one_hot(x, num_classes, dtype=jnp.float32)
    y = np.asarray(x)
    if y.dtype.kind == "f":
        if not np.all(y == np.round(y)):
            raise ValueError("to_categorical expects integer class labels; got non-integer "
                             "floats. Round or map them to 0..num_classes-1 first.")
        y = y.astype(np.int64)
    elif y.dtype.kind not in "iub":
        raise TypeError(f"to_categorical expects integer class labels; got dtype {y.dtype}.")
    if y.ndim > 1 and y.shape[-1] == 1:
        y = y[..., 0]
    if y.size and y.min() < 0:
        raise ValueError(f"to_categorical got a negative label ({y.min()}); labels must be "
                         "0..num_classes-1.")
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    elif y.size and y.max() >= num_classes:
        raise ValueError(f"to_categorical got label {int(y.max())} but num_classes="
                         f"{num_classes}; labels must be 0..{num_classes - 1}.")
    out = np.zeros(y.shape + (num_classes,), dtype=np.float32)
    np.put_along_axis(out, y[..., None].astype(np.int64), 1.0, axis=-1)
    return out


@export("loopax.utils.normalize")
def normalize(x, axis=-1, order=2):
    """`x` divided by its `order`-norm along `axis` (zero vectors stay zero).

    Args:
        x: A JAX array (computed with JAX) or anything NumPy takes (with NumPy).
        axis: The axis of the norm (default -1).
        order: The norm's order, as `numpy.linalg.norm`'s `ord` (default 2).

    Returns:
        An array of `x`'s shape: a `jax.Array` for a JAX input, else a NumPy array.
    """
    if isinstance(x, jax.Array):
        norm = jnp.linalg.norm(x, ord=order, axis=axis, keepdims=True)
        return x / jnp.where(norm == 0, 1, norm)
    if not isinstance(x, (np.ndarray, np.generic, list, tuple, int, float)):
        # A symbolic tensor, a Tensor or Variable: as Keras, loopax.ops.normalize.
        return ops_nn.normalize(x, axis=axis, order=order)
    x = np.asarray(x)
    norm = np.linalg.norm(x, ord=order, axis=axis, keepdims=True)
    norm = np.where(norm == 0, 1, norm)
    return x / norm
