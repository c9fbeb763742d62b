"""`keras.applications.densenet`."""

from loopax.src.applications.densenet import DenseNet121, DenseNet169, DenseNet201
from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_torch as preprocess_input

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "decode_predictions",
           "preprocess_input"]
