"""Dtype policies (Keras's `keras.mixed_precision` / `keras.dtype_policies`)."""

from loopax.src.mixed_precision.policies import (
    DTypePolicy,
    Policy,
    dtype_policy,
    get,
    global_policy,
    set_dtype_policy,
    set_global_policy,
)

__all__ = ["DTypePolicy", "Policy", "dtype_policy", "get", "global_policy",
           "set_dtype_policy", "set_global_policy"]
