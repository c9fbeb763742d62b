"""`keras.applications.convnext`."""

from loopax.src.applications.convnext import (
    ConvNeXtBase,
    ConvNeXtLarge,
    ConvNeXtSmall,
    ConvNeXtTiny,
    ConvNeXtXLarge,
)
from loopax.src.applications.imagenet_utils import decode_predictions
from loopax.src.applications.input_modes import preprocess_none as preprocess_input

__all__ = ["ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtSmall", "ConvNeXtTiny",
           "ConvNeXtXLarge", "decode_predictions", "preprocess_input"]
