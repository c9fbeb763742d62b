"""`keras.applications.mobilenet`."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_tf as preprocess_input
from loopax.src.applications.mobilenet import MobileNet

__all__ = ["MobileNet", "decode_predictions", "preprocess_input"]
