"""`keras.applications.imagenet_utils`."""

from loopax.src.applications.imagenet_utils import decode_predictions, preprocess_input

__all__ = ["decode_predictions", "preprocess_input"]
