"""`keras.applications.xception`."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_tf as preprocess_input
from loopax.src.applications.xception import Xception

__all__ = ["Xception", "decode_predictions", "preprocess_input"]
