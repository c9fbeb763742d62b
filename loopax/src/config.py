"""Global settings, under the names of `keras.config` and `keras.backend`.

loopax runs on JAX only, with channels-last images and a fixed `epsilon`, so
those are read-only here; the default float dtype can be set.
"""

from __future__ import annotations

from loopax.src import dtypes
from loopax.src.dtypes import floatx, set_floatx, standardize

__all__ = ["backend", "epsilon", "floatx", "image_data_format", "set_floatx", "standardize"]


def backend() -> str:
    """Returns the backend loopax runs on: always "jax"."""
    return "jax"


def epsilon() -> float:
    """Returns the fuzz factor loopax's losses, ops and constraints use (1e-7, as Keras's
    default; fixed)."""
    return dtypes.EPSILON


def image_data_format() -> str:
    """Returns the default `data_format` of convolution and pooling layers:
    "channels_last" (fixed)."""
    return "channels_last"
