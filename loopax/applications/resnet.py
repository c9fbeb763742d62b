"""`keras.applications.resnet` (ResNet101/152 are not built in loopax yet)."""

from loopax.src.applications.resnet import ResNet50, decode_predictions, preprocess_input

__all__ = ["ResNet50", "decode_predictions", "preprocess_input"]
