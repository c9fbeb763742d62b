"""`keras.applications.vgg16`."""

from loopax.src.applications.vgg16 import VGG16, decode_predictions, preprocess_input

__all__ = ["VGG16", "decode_predictions", "preprocess_input"]
