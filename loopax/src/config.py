"""Global settings, under the names of `keras.config` and `keras.backend`.

loopax runs on JAX only with a fixed `epsilon`, so those are read-only here;
the default float dtype and the default image layout can be set.
"""

from __future__ import annotations

from loopax.src import dtypes
from loopax.src.dtypes import floatx, set_floatx, standardize

__all__ = ["backend", "epsilon", "floatx", "image_data_format", "set_floatx",
           "set_image_data_format", "standardize"]

_IMAGE_DATA_FORMATS = ("channels_last", "channels_first")
_image_data_format = "channels_last"


def backend() -> str:
    """Returns the backend loopax runs on: always "jax"."""
    return "jax"


def epsilon() -> float:
    """Returns the fuzz factor loopax's losses, ops and constraints use (1e-7, as Keras's
    default; fixed)."""
    return dtypes.EPSILON


def image_data_format() -> str:
    """Returns the layout that layers and ops given `data_format=None` use:
    "channels_last" (`(batch, *spatial, channels)`, the default) or "channels_first"
    (`(batch, channels, *spatial)`); see `set_image_data_format`."""
    return _image_data_format


def set_image_data_format(data_format: str) -> None:
    """Sets the layout that layers and ops given `data_format=None` use.

    A layer reads it when it is created (and keeps it in its config); an op reads it
    when it is called.

    Args:
        data_format: "channels_last" or "channels_first" (any case).

    Raises:
        ValueError: `data_format` is neither.
    """
    global _image_data_format
    value = str(data_format).lower()
    if value not in _IMAGE_DATA_FORMATS:
        raise ValueError(f"set_image_data_format: `data_format` must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}.")
    _image_data_format = value
