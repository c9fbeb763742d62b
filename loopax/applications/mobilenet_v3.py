"""`keras.applications.mobilenet_v3`."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_none as preprocess_input
from loopax.src.applications.mobilenet_v3 import MobileNetV3Large, MobileNetV3Small

__all__ = ["MobileNetV3Large", "MobileNetV3Small", "decode_predictions", "preprocess_input"]
