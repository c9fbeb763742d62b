"""Dtype policies (Keras's `keras.dtype_policies`): `DTypePolicy`, `get`."""

from loopax.src.mixed_precision import DTypePolicy, get

__all__ = ["DTypePolicy", "get"]
