"""`keras.applications.mobilenet_v3` (as in Keras, the models themselves are
`loopax.applications.MobileNetV3Small`/`MobileNetV3Large`)."""

from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_none as preprocess_input

__all__ = ["decode_predictions", "preprocess_input"]
