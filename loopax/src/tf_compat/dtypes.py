"""TensorFlow's dtype names as NumPy dtypes (`tf.float32 == x.dtype` holds for
loopax's arrays). 64-bit types need JAX's x64 mode; without it arrays of
them are stored as their 32-bit counterparts, as everywhere in loopax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

float16 = half = np.dtype("float16")
bfloat16 = np.dtype(jnp.bfloat16)
float32 = np.dtype("float32")
float64 = double = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
bool = np.dtype("bool")  # TensorFlow's name
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")
# `tf.string`: the dtype of host-side string tensors (NumPy object arrays of bytes,
# loopax.src.data.strings); XLA never sees them.
string = np.dtype(object)

DType = np.dtype


def as_dtype(type_value):
    """`type_value` as a NumPy dtype, like `tf.as_dtype`.

    Args:
        type_value: A name ("float32"), a NumPy/JAX type or a dtype.

    Returns:
        A `numpy.dtype`.

    `"string"` (or `str`, `bytes`) is `tf.string`, the dtype of host-side string
    tensors.
    """
    if type_value in ("string", str, bytes):
        return string
    return np.dtype(type_value)


def storage_dtype(dtype):
    """The dtype arrays of `dtype` have on this JAX configuration (int64 ->
    int32 without x64), for comparisons."""
    if dtype is None:
        return None
    return jax.dtypes.canonicalize_dtype(np.dtype(dtype))
