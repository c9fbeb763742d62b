"""`keras.applications.resnet_v2` (its models are not built in loopax yet)."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_tf as preprocess_input

__all__ = ["decode_predictions", "preprocess_input"]
