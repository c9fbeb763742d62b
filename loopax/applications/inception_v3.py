"""`keras.applications.inception_v3`."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.inception_v3 import InceptionV3
from loopax.src.applications.input_modes import preprocess_tf as preprocess_input

__all__ = ["InceptionV3", "decode_predictions", "preprocess_input"]
