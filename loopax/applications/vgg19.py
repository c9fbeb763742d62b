"""`keras.applications.vgg19`."""

from loopax.src.applications.vgg16 import VGG19, decode_predictions, preprocess_input

__all__ = ["VGG19", "decode_predictions", "preprocess_input"]
