"""Batches padded to a fixed number of rows, and which of their rows are real.

`fit()` and `evaluate()` can run a pass's last, partial batch through the full
batches' compiled step instead of compiling one more program for its shape
(trainers/padded_batches.py): the batch is padded with copies of its own rows
to the full size, and the step is traced inside `padded_rows(rows, size)`,
`rows` a traced count. While that trace runs, the compiled loss and metrics
give the padding rows a weight of 0 (`row_weights`), mean reductions divide by
the real rows' entries (`entries`) and the loss tracker counts the real rows
(`real_rows`): the numbers of the unpadded batch, up to the order of float
additions. Outside such a trace everything here is the identity.
"""

from __future__ import annotations

import contextlib
import threading

import jax.numpy as jnp
import numpy as np


class _Padding(threading.local):
    rows = None   # the real rows (a traced int32 scalar) of the batch being traced
    size = None   # its padded size (rows of every batch array)


_PADDING = _Padding()


@contextlib.contextmanager
def padded_rows(rows, size: int):
    """Traces a step whose batch has `size` rows, of which the first `rows` are real."""
    previous = (_PADDING.rows, _PADDING.size)
    _PADDING.rows, _PADDING.size = rows, int(size)
    try:
        yield
    finally:
        _PADDING.rows, _PADDING.size = previous


def _padded(leading) -> bool:
    return _PADDING.rows is not None and leading == _PADDING.size


def real_rows(size):
    """The real rows of a batch of `size` rows (`size` itself outside a padded trace)."""
    return _PADDING.rows if _padded(size) else size


def entries(values):
    """How many of `values`' entries are real: `values.size`, or in a padded trace,
    for per-row values (leading dimension the padded size), the real rows'."""
    if values.ndim and _padded(values.shape[0]):
        return _PADDING.rows * (values.size // _PADDING.size)
    return values.size


def row_weights(weight, like):
    """`weight` (a sample weight, or None) times 0/1 weights of the real rows, in a
    padded trace where `like` (the per-row values it weighs) has the padded rows;
    `weight` unchanged otherwise. With no `weight` the result is a per-sample
    weight of shape (rows,), as a user's would be."""
    if not np.shape(like) or not _padded(np.shape(like)[0]):
        return weight
    real = jnp.arange(_PADDING.size) < _PADDING.rows
    if weight is None:
        return real.astype("float32")
    weight = jnp.asarray(weight)
    return weight * real.reshape((-1,) + (1,) * (weight.ndim - 1)).astype(weight.dtype)
