"""Keras 2's serialization format: `serialize_keras_object`, `deserialize_keras_object`
(as `keras.legacy.saving`)."""

from loopax.src.utils.legacy_serialization import (
    deserialize_keras_object,
    serialize_keras_object,
)
