"""Dtype policies (Keras's `keras.mixed_precision` / `keras.dtype_policies`)."""

from loopax.src.mixed_precision.policies import (
    QUANTIZATION_MODES,
    AWQDTypePolicy,
    DTypePolicy,
    DTypePolicyMap,
    FloatDTypePolicy,
    GPTQDTypePolicy,
    Int4DTypePolicy,
    Policy,
    QuantizedDTypePolicy,
    QuantizedFloat8DTypePolicy,
    deserialize,
    dtype_policy,
    get,
    global_policy,
    serialize,
    set_dtype_policy,
    set_global_policy,
)

__all__ = ["QUANTIZATION_MODES", "AWQDTypePolicy", "DTypePolicy", "DTypePolicyMap", "FloatDTypePolicy",
           "GPTQDTypePolicy", "Int4DTypePolicy", "Policy", "QuantizedDTypePolicy", "QuantizedFloat8DTypePolicy",
           "deserialize", "dtype_policy", "get", "global_policy", "serialize",
           "set_dtype_policy", "set_global_policy"]
