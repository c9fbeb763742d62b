"""`keras.applications.nasnet`."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_tf as preprocess_input
from loopax.src.applications.nasnet import NASNetLarge, NASNetMobile

__all__ = ["NASNetLarge", "NASNetMobile", "decode_predictions", "preprocess_input"]
