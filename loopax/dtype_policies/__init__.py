"""Dtype policies (Keras's `keras.dtype_policies`): plain, quantized and mapped."""

from loopax.src.mixed_precision import (
    AWQDTypePolicy,
    DTypePolicy,
    DTypePolicyMap,
    FloatDTypePolicy,
    GPTQDTypePolicy,
    Int4DTypePolicy,
    QuantizedDTypePolicy,
    QuantizedFloat8DTypePolicy,
    deserialize,
    get,
    serialize,
)

__all__ = ["AWQDTypePolicy", "DTypePolicy", "DTypePolicyMap", "FloatDTypePolicy", "GPTQDTypePolicy",
           "Int4DTypePolicy",
           "QuantizedDTypePolicy", "QuantizedFloat8DTypePolicy", "deserialize", "get",
           "serialize"]
