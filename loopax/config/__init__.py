"""Global settings (Keras names): `floatx`, `set_floatx`, `epsilon`, `backend`,
`image_data_format`, `set_image_data_format`, `dtype_policy`, `set_dtype_policy`."""

from loopax.src.config import (
    backend,
    epsilon,
    floatx,
    image_data_format,
    set_floatx,
    set_image_data_format,
)
from loopax.src.mixed_precision import dtype_policy, set_dtype_policy
