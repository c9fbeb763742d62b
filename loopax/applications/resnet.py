"""`keras.applications.resnet`."""

from loopax.src.applications.resnet import (
    ResNet50,
    ResNet101,
    ResNet152,
    decode_predictions,
    preprocess_input,
)

__all__ = ["ResNet50", "ResNet101", "ResNet152", "decode_predictions", "preprocess_input"]
