"""`tf.ragged.constant` and `tf.sparse.SparseTensor`, held on the host.

XLA needs dense, static shapes, so loopax has no ragged or sparse tensors in its
compiled programs. What TensorFlow code builds eagerly is kept: a ragged constant
is rows of unequal length (`to_list()`, `to_tensor()`, indexing, `row_lengths()`,
`shape` `(rows, None)`), a SparseTensor is its COO parts with `tf.sparse.to_dense`
/ `from_dense`. Any other op on them raises an error that names the dense way
(padding and masks).
"""

from __future__ import annotations

import types

import jax.numpy as jnp
import numpy as np

from loopax.src.data.strings import is_text
from loopax.src.tensor import EagerTensor, Tensor
from loopax.src.tf_compat.strings import RaggedNumbers, RaggedStrings, _row

NO_RAGGED = ("loopax has no ragged or sparse tensors in compiled code (XLA needs dense, "
             "static shapes): pad to a fixed length with "
             "loopax.preprocessing.sequence.pad_sequences and use a mask "
             "(layers.Masking / Embedding(mask_zero=True)), or pass a dense array. "
             "Eagerly, tf.ragged.constant and tf.sparse.SparseTensor/to_dense/from_dense "
             "exist.")


def _rows(value, dtype):
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple)) \
            and value[0] and isinstance(value[0][0], (list, tuple)):
        return RaggedNumbers(_rows(v, dtype) for v in value)
    if is_text(value):
        return RaggedStrings(_row([s.encode() if isinstance(s, str) else s for s in r])
                             for r in value)
    flat = [x for r in value for x in r]
    kind = np.asarray(flat).dtype if dtype is None else np.dtype(dtype)
    if dtype is None:
        kind = {np.dtype("int64"): np.dtype("int32"),
                np.dtype("float64"): np.dtype("float32")}.get(kind, kind)
    return RaggedNumbers(np.asarray(r, kind) for r in value)


class RaggedTensor(RaggedNumbers):
    """A ragged constant (rows of unequal length) on the host; see the module docstring.

    Args:
        rows: 1-D NumPy arrays of numbers (or, nested, RaggedTensors), one per row.
    """

    def __repr__(self):
        return f"<tf.RaggedTensor {self.to_list()}>"

    @classmethod
    def from_row_lengths(cls, values, row_lengths, validate=True, name=None):
        values = np.asarray(values)
        ends = np.cumsum(np.asarray(row_lengths))
        return cls(np.split(values, ends[:-1]))


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None,
             row_splits_dtype=None):
    """Nested Python lists of unequal lengths as a host-side ragged tensor."""
    rows = _rows(pylist, dtype)
    return rows if isinstance(rows, RaggedStrings) and not isinstance(rows, RaggedNumbers) \
        else RaggedTensor(rows._rows)


def _ragged_missing(name):
    raise AttributeError(f"loopax.tf.ragged.{name} is not provided: {NO_RAGGED}")


ragged = types.ModuleType("loopax.tf.ragged", "tf.ragged: `constant` on the host.")
ragged.constant = constant
ragged.RaggedTensor = RaggedTensor
ragged.__getattr__ = _ragged_missing


def _numpy(x):
    if isinstance(x, Tensor):
        return np.asarray(x.value)
    return np.asarray(x)


class SparseTensor:
    """A sparse tensor's COO parts (`indices`, `values`, `dense_shape`) on the host.

    Args:
        indices: (n, rank) int positions of the values.
        values: the n values.
        dense_shape: the shape of the dense tensor.
    """

    def __init__(self, indices, values, dense_shape):
        self._indices = _numpy(indices).astype(np.int32).reshape(-1, len(_numpy(dense_shape)))
        self._values = _numpy(values)
        if self._values.dtype == np.int64:
            self._values = self._values.astype(np.int32)
        elif self._values.dtype == np.float64:
            self._values = self._values.astype(np.float32)
        self._shape = _numpy(dense_shape).astype(np.int32)

    @property
    def indices(self):
        return EagerTensor(jnp.asarray(self._indices))

    @property
    def values(self):
        return EagerTensor(jnp.asarray(self._values))

    @property
    def dense_shape(self):
        return EagerTensor(jnp.asarray(self._shape))

    @property
    def shape(self):
        return tuple(int(d) for d in self._shape)

    @property
    def dtype(self):
        return self._values.dtype

    def __repr__(self):
        return (f"SparseTensor(indices={self.indices!s}, values={self.values!s}, "
                f"dense_shape={self.dense_shape!s})")


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense Tensor a SparseTensor describes (`default_value` elsewhere, 0 by default)."""
    out = np.full(sp_input.shape, 0 if default_value is None else default_value,
                  sp_input._values.dtype)
    out[tuple(sp_input._indices.T)] = sp_input._values
    return EagerTensor(jnp.asarray(out))


def from_dense(tensor, name=None):
    """The SparseTensor of a dense tensor's non-zero entries."""
    array = _numpy(tensor)
    indices = np.argwhere(array != 0)
    return SparseTensor(indices, array[tuple(indices.T)], array.shape)


def _sparse_missing(name):
    raise AttributeError(f"loopax.tf.sparse.{name} is not provided: {NO_RAGGED}")


sparse = types.ModuleType("loopax.tf.sparse", "tf.sparse: SparseTensor on the host.")
sparse.SparseTensor = SparseTensor
sparse.to_dense = to_dense
sparse.from_dense = from_dense
sparse.__getattr__ = _sparse_missing
