"""The basics of `keras.backend`: which backend runs, dtypes and settings."""

from loopax.src.config import (
    backend,
    epsilon,
    floatx,
    image_data_format,
    set_epsilon,
    set_floatx,
    set_image_data_format,
    standardize_dtype,
)
from loopax.src.layers.symbolic import is_keras_tensor
from loopax.src.ops.core import is_float_dtype, is_int_dtype, result_type
from loopax.src.state import clear_session, get_uid
