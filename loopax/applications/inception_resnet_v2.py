"""`keras.applications.inception_resnet_v2`."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.inception_resnet_v2 import InceptionResNetV2
from loopax.src.applications.input_modes import preprocess_tf as preprocess_input

__all__ = ["InceptionResNetV2", "decode_predictions", "preprocess_input"]
