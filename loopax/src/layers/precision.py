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


def cast_inputs(tree, policy):
    """`(args, kwargs)` with their float arrays cast to the compute dtype of
    `policy` (when it is a float dtype)."""
    if not policy.computes_in_float:
        return tree
    dtype = policy.compute_np_dtype
    args, kwargs = tree
    if all(_needs_no_cast(x, dtype) for x in (*args, *kwargs.values())):
        return tree   # the common case, without a tree traversal
    return jax.tree_util.tree_map(lambda x: _cast_leaf(x, dtype), tree, is_leaf=_is_leaf)


def _needs_no_cast(x, dtype):
    if x is None or isinstance(x, (bool, int, str)):
        return True
    x_dtype = getattr(x, "dtype", None)
    if x_dtype is None or isinstance(x, (list, tuple, dict)):
        return False
    return x_dtype == dtype or not jnp.issubdtype(x_dtype, jnp.floating)


def call_scope(layer):
    """The autocast scope `layer.call` runs in (a no-op context when the
    current one already fits)."""
    current = _state.autocast_dtype
    policy = layer.dtype_policy
    if current is not None:
        if not layer.autocast or not policy.computes_in_float:
            return autocast_scope(None)
        if current != policy.compute_np_dtype:
            return autocast_scope(policy.compute_np_dtype)
        return _NO_SCOPE
    if layer.autocast and policy.is_mixed and policy.computes_in_float:
        return autocast_scope(policy.compute_np_dtype)
    return _NO_SCOPE


_NO_SCOPE = contextlib.nullcontext()
