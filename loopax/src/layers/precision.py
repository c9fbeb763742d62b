"""What a layer's dtype policy does to a call (Keras's rules).

- `cast_inputs`: float arrays among the call's arguments become the layer's
  compute dtype (integer and boolean ones are left alone); a mask attached
  to an input stays attached to the cast input.
- `call_scope`: while `call` runs, float Variables read as the compute dtype
  when the layer's policy is mixed (`state.autocast_scope`); a float32 layer
  inside a mixed model reads its weights as float32, and a layer with
  `autocast=False` (or a non-float compute dtype) turns autocasting off.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import dtypes
from loopax.src.layers import masking
from loopax.src.state import ArrayValue, _state, autocast_scope


def _cast_leaf(x, dtype):
    if isinstance(x, (jax.Array, np.ndarray, ArrayValue)):
        x_dtype = x.dtype
        if x_dtype != dtype and jnp.issubdtype(x_dtype, jnp.floating):
            mask = masking.get_keras_mask(x)
            value = x._read_value() if isinstance(x, ArrayValue) else x
            out = jnp.asarray(value).astype(dtype)
            if mask is not None:
                masking.set_keras_mask(out, mask)
            return out
    return x


def _is_leaf(x):
    return isinstance(x, ArrayValue)


def cast_inputs(tree, dtype):
    """`tree` with its float arrays cast to `dtype` (a float compute dtype;
    otherwise unchanged)."""
    if not dtypes.is_float(dtype):
        return tree
    dtype = jnp.dtype(dtype)
    return jax.tree_util.tree_map(lambda x: _cast_leaf(x, dtype), tree, is_leaf=_is_leaf)


def call_scope(layer):
    """The autocast scope `layer.call` runs in (a no-op context when the
    current one already fits)."""
    current = _state.autocast_dtype
    compute = layer.compute_dtype
    if current is not None:
        if not layer.autocast or not dtypes.is_float(compute):
            return autocast_scope(None)
        if current != jnp.dtype(compute):
            return autocast_scope(compute)
        return contextlib.nullcontext()
    if layer.autocast and compute != layer.variable_dtype and dtypes.is_float(compute):
        return autocast_scope(compute)
    return contextlib.nullcontext()
