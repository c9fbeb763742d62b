"""The basics of `keras.backend`: which backend runs, dtypes and settings."""

from loopax.src.config import (
    backend,
    epsilon,
    floatx,
    image_data_format,
    set_floatx,
    set_image_data_format,
)
from loopax.src.config import standardize as standardize_dtype
from loopax.src.state import clear_session
