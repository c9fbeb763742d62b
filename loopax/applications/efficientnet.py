"""`keras.applications.efficientnet`."""

from loopax.src.applications.efficientnet import (
    EfficientNetB0,
    decode_predictions,
    preprocess_input,
)

__all__ = ["EfficientNetB0", "decode_predictions", "preprocess_input"]
