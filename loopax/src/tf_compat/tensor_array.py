"""`tf.TensorArray`, functional: `write` returns the new array (as TensorFlow
asks code to use it: `ta = ta.write(i, x)`). It is a JAX pytree holding one
buffer of shape (size, *element_shape), so it can be a `tf.while_loop` /
`fori_loop` variable and written at a traced index. The buffer is made on the
first write (or from `element_shape`); a `dynamic_size` array grows when
written past its end eagerly (inside a compiled loop the size is fixed)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.tensor import unwrap
from loopax.src.tf_compat.tensors import as_tensor


@jax.tree_util.register_pytree_node_class
class TensorArray:
    """A list of same-shape tensors stacked into one buffer.

    Args:
        dtype: the elements' dtype.
        size: the number of elements (0 with `dynamic_size=True` to grow eagerly).
        dynamic_size: whether eager writes past the end grow it.
        element_shape: the elements' shape, when known before the first write
            (needed to write first inside a compiled loop).
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None,
                 _buffer=None):
        self.dtype = np.dtype(dtype)
        self.dynamic_size = bool(dynamic_size)
        self._size = int(unwrap(size)) if size is not None else 0
        self._buffer = _buffer
        if _buffer is None and element_shape is not None and None not in tuple(element_shape):
            self._buffer = jnp.zeros((self._size,) + tuple(element_shape), self.dtype)

    def tree_flatten(self):
        return (self._buffer,), (self.dtype, self.dynamic_size, self._size)

    @classmethod
    def tree_unflatten(cls, aux, children):
        dtype, dynamic_size, size = aux
        return cls(dtype, size, dynamic_size, _buffer=children[0])

    def _autograph_loop_init(self, after_one_iteration):
        """(autograph) This array as a compiled loop carries it: first written inside
        the loop, its buffer gets the shape one iteration gave it (zeros until written)."""
        written = getattr(after_one_iteration, "_buffer", None)
        if self._buffer is not None or written is None:
            return self
        return self._with(jnp.zeros(written.shape, self.dtype))

    def _with(self, buffer):
        return TensorArray(self.dtype, buffer.shape[0], self.dynamic_size, _buffer=buffer)

    def write(self, index, value, name=None):
        """A TensorArray with element `index` set to `value`."""
        value = jnp.asarray(unwrap(value), self.dtype)
        buffer = self._buffer
        if buffer is None:
            buffer = jnp.zeros((self._size,) + value.shape, self.dtype)
        index = unwrap(index)
        if not isinstance(index, jax.core.Tracer) and int(index) >= buffer.shape[0]:
            if not self.dynamic_size:
                raise IndexError(f"TensorArray.write: index {int(index)} is out of range for "
                                 f"size {buffer.shape[0]}; create it with a larger `size` or "
                                 "dynamic_size=True.")
            grow = int(index) + 1 - buffer.shape[0]
            buffer = jnp.concatenate([buffer, jnp.zeros((grow,) + value.shape, self.dtype)])
        return self._with(buffer.at[index].set(value))

    def read(self, index, name=None):
        """Element `index`."""
        self._check_written("read")
        return as_tensor(self._buffer[unwrap(index)])

    def gather(self, indices, name=None):
        """The elements at `indices`, stacked."""
        self._check_written("gather")
        return as_tensor(jnp.take(self._buffer, jnp.asarray(unwrap(indices)), axis=0))

    def stack(self, name=None):
        """All elements stacked along a new first axis: shape (size, *element_shape)."""
        self._check_written("stack")
        return as_tensor(self._buffer)

    def concat(self, name=None):
        """All elements joined along their first axis."""
        self._check_written("concat")
        return as_tensor(self._buffer.reshape((-1,) + self._buffer.shape[2:]))

    def unstack(self, value, name=None):
        """A TensorArray whose elements are the slices of `value` along axis 0."""
        return self._with(jnp.asarray(unwrap(value), self.dtype))

    def scatter(self, indices, value, name=None):
        """A TensorArray with elements `indices` set to the slices of `value`."""
        value = jnp.asarray(unwrap(value), self.dtype)
        buffer = self._buffer
        if buffer is None:
            buffer = jnp.zeros((self._size,) + value.shape[1:], self.dtype)
        return self._with(buffer.at[jnp.asarray(unwrap(indices))].set(value))

    def size(self, name=None):
        """The number of elements, as an int32 Tensor."""
        n = self._size if self._buffer is None else self._buffer.shape[0]
        return as_tensor(jnp.asarray(n, jnp.int32))

    @property
    def element_shape(self):
        return None if self._buffer is None else tuple(self._buffer.shape[1:])

    def _check_written(self, what):
        if self._buffer is None:
            raise ValueError(f"TensorArray.{what}: nothing was written yet and no "
                             "element_shape was given, so the elements' shape is unknown.")

    def __repr__(self):
        return f"<TensorArray dtype={self.dtype.name} size={int(self.size())}>"
