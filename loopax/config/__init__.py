"""Global settings (Keras names): `floatx`, `set_floatx`, `epsilon`, `backend`,
`image_data_format`."""

from loopax.src.config import backend, epsilon, floatx, image_data_format, set_floatx
