"""Masks: which timesteps of a sequence are real and which are padding.

As in Keras, a layer that produces a mask (`Embedding(mask_zero=True)`,
`Masking`) attaches it to its output, and the next layer called on that
output receives it as `call(..., mask=...)` (when its `call` takes `mask`)
and passes it on (when it `supports_masking`). The mask rides on the output
array as its `_keras_mask` attribute; JAX tracers (under `jit`, inside
`fit()`) refuse new attributes, so for them it is kept in a table keyed by
the tracer's id, dropped when the tracer is garbage-collected. Keras does the
same, so `get_keras_mask(x)` and `x._keras_mask` (on concrete arrays) read as
in Keras.
"""

from __future__ import annotations

import weakref

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.layers.op_layer import call_on_symbolic
from loopax.src.layers.symbolic import is_symbolic
from loopax.src.tensor import unwrap

_MASK_ATTR = "_keras_mask"
_masks_by_id: dict[int, object] = {}


def _forget(key):
    _masks_by_id.pop(key, None)


def set_keras_mask(x, mask):
    """Attaches `mask` (boolean, `x.shape[:2]` for sequences) to `x`; None clears it."""
    try:
        setattr(x, _MASK_ATTR, mask)
        return
    except AttributeError:
        pass
    key = id(x)
    if mask is None:
        _masks_by_id.pop(key, None)
        return
    try:
        if key not in _masks_by_id:
            weakref.finalize(x, _forget, key)
    except TypeError:   # not weak-referenceable (a Python number): nothing to attach to
        return
    _masks_by_id[key] = mask


def get_keras_mask(x):
    """The mask attached to `x`, or None."""
    mask = getattr(x, _MASK_ATTR, None)
    if mask is None:
        mask = _masks_by_id.get(id(x))
    return mask


def masks_of(first_arg):
    """The masks attached to a layer's first argument, in its structure
    (None when there are none)."""
    if isinstance(first_arg, (list, tuple)):
        masks = [get_keras_mask(x) for x in first_arg]
        return masks if any(m is not None for m in masks) else None
    return get_keras_mask(first_arg)


def attach_output_masks(layer, inputs, outputs, previous_mask):
    """After `layer` ran: puts `layer.compute_mask(inputs, previous_mask)` on
    the outputs that carry no mask yet (as Keras's `_set_mask_metadata`)."""
    flat_outputs = jax.tree_util.tree_leaves(outputs)
    if not flat_outputs or all(get_keras_mask(y) is not None for y in flat_outputs):
        return
    _set_output_masks(flat_outputs, layer.compute_mask(inputs, previous_mask))


def attach_symbolic_output_masks(layer, inputs, outputs):
    """After a call on symbolic tensors: the outputs' `_keras_mask` as a symbolic
    tensor (Keras's symbolic tensors carry it too, e.g. `Embedding(mask_zero=True)`'s
    output). `compute_mask` is called on the symbolic tensors directly (Python
    operators work on them); when it needs array functions, it is recorded as an
    op of the graph instead, so the mask can also be a model output."""
    previous_mask = masks_of(inputs)
    try:
        output_masks = layer.compute_mask(inputs, previous_mask)
        if not all(is_symbolic(m) for m in jax.tree_util.tree_leaves(
                output_masks, is_leaf=is_symbolic)):
            raise TypeError("compute_mask returned a value that is not symbolic")
    except Exception:
        def compute_mask(x, mask):
            return layer.compute_mask(x, mask)
        compute_mask.__name__ = f"{layer.name}_compute_mask"
        output_masks = call_on_symbolic(compute_mask, (inputs, previous_mask), {})
    _set_output_masks(jax.tree_util.tree_leaves(outputs, is_leaf=is_symbolic), output_masks)


def _set_output_masks(flat_outputs, output_masks):
    """Puts one mask per output (`output_masks`: one for all, or a list aligned with
    the outputs) on the outputs that carry none yet."""
    if output_masks is None:
        return
    if not isinstance(output_masks, (list, tuple)):
        output_masks = [output_masks] * len(flat_outputs) if len(flat_outputs) == 1 \
            else [output_masks] + [None] * (len(flat_outputs) - 1)
    for y, mask in zip(flat_outputs, output_masks):
        if mask is not None and get_keras_mask(y) is None:
            set_keras_mask(y, mask)


@export("loopax.layers.Masking")
class Masking(Layer):
    """Marks timesteps whose features all equal `mask_value` as padding.

    Input `(batch, timesteps, features)`; the output is the input with
    masked timesteps zeroed, carrying a `(batch, timesteps)` boolean mask
    (True: keep) for the layers after it.

    Args:
        mask_value: The padding value (default 0.0).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self.built = True

    def compute_mask(self, inputs, mask=None):
        return jnp.any(unwrap(inputs) != self.mask_value, axis=-1)

    def call(self, inputs):
        x = unwrap(inputs)
        keep = jnp.any(x != self.mask_value, axis=-1, keepdims=True)
        return x * keep.astype(x.dtype)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}
