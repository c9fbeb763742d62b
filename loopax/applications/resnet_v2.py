"""`keras.applications.resnet_v2`."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_tf as preprocess_input
from loopax.src.applications.resnet import ResNet50V2, ResNet101V2, ResNet152V2

__all__ = ["ResNet50V2", "ResNet101V2", "ResNet152V2", "decode_predictions",
           "preprocess_input"]
