"""`keras.applications.efficientnet_v2`."""

from loopax.src.applications.efficientnet_v2 import (
    EfficientNetV2B0,
    EfficientNetV2B1,
    EfficientNetV2B2,
    EfficientNetV2B3,
    EfficientNetV2L,
    EfficientNetV2M,
    EfficientNetV2S,
)
from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_none as preprocess_input

__all__ = ["EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3",
           "EfficientNetV2L", "EfficientNetV2M", "EfficientNetV2S", "decode_predictions",
           "preprocess_input"]
