"""`keras.applications.mobilenet`."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.mobilenet import MobileNet, preprocess_input

__all__ = ["MobileNet", "decode_predictions", "preprocess_input"]
