"""Global settings, under the names of `keras.config` and `keras.backend`.

loopax runs on JAX only: `set_backend("jax")` is accepted, any other backend is an
error. The default float dtype, the default image layout, `epsilon`, the debugging
caps on `fit()` (`max_epochs`, `max_steps_per_epoch`) and the flash-attention and
traceback-filtering switches can be set.
"""

from __future__ import annotations

import os
import warnings

import jax

from loopax.src import dtypes
from loopax.src.api_export import export
from loopax.src.dtypes import floatx, set_floatx, standardize

__all__ = ["backend", "disable_flash_attention", "disable_traceback_filtering",
           "enable_flash_attention", "enable_traceback_filtering",
           "enable_unsafe_deserialization", "epsilon", "floatx", "image_data_format",
           "is_flash_attention_enabled", "is_nnx_enabled", "is_traceback_filtering_enabled",
           "max_epochs", "max_steps_per_epoch", "set_backend", "set_epsilon", "set_floatx",
           "set_image_data_format", "set_max_epochs", "set_max_steps_per_epoch",
           "standardize", "standardize_dtype"]

# Python's types name the dtypes Keras gives them on JAX (NumPy would say int64/float64).
_PYTHON_TYPE_DTYPES = {bool: "bool", int: "int32", "int": "int32", float: "float32",
                       complex: "complex64"}


@export("loopax.backend.standardize_dtype", "loopax.utils.standardize_dtype")
def standardize_dtype(dtype) -> str:
    """A dtype's canonical name, as Keras's `standardize_dtype`: None is `floatx()`,
    Python's `int`/`float`/`complex` are "int32"/"float32"/"complex64".

    Args:
        dtype: A dtype, its name, a Python type, an array (its dtype) or None.

    Returns:
        The name, a str.

    Raises:
        TypeError: `dtype` is not a dtype.
    """
    if isinstance(dtype, (type, str)) and dtype in _PYTHON_TYPE_DTYPES:
        return _PYTHON_TYPE_DTYPES[dtype]
    return standardize(dtype)


_IMAGE_DATA_FORMATS = ("channels_last", "channels_first")
_image_data_format = "channels_last"


@export("loopax.backend.backend", "loopax.config.backend")
def backend() -> str:
    """Returns the backend loopax runs on: always "jax"."""
    return "jax"


_epsilon = dtypes.EPSILON


@export("loopax.backend.epsilon", "loopax.config.epsilon")
def epsilon() -> float:
    """Returns the fuzz factor (1e-7 unless `set_epsilon` changed it)."""
    return _epsilon


@export("loopax.backend.set_epsilon", "loopax.config.set_epsilon")
def set_epsilon(value: float) -> None:
    """Sets the value `epsilon()` returns (Keras's `set_epsilon`).

    loopax's built-in losses, metrics and constraints keep Keras's default 1e-7 (it is
    compiled into them); a value other than that warns, since only code that reads
    `epsilon()` itself sees it.

    Args:
        value: The new fuzz factor, a float.
    """
    global _epsilon
    _epsilon = float(value)
    if _epsilon != dtypes.EPSILON:
        warnings.warn(f"set_epsilon({value!r}): `loopax.config.epsilon()` now returns it, but "
                      f"loopax's built-in losses, metrics and constraints keep "
                      f"{dtypes.EPSILON}. To clip with another value, write it in your own "
                      "loss.", stacklevel=2)


@export("loopax.backend.image_data_format", "loopax.config.image_data_format")
def image_data_format() -> str:
    """Returns the layout that layers and ops given `data_format=None` use:
    "channels_last" (`(batch, *spatial, channels)`, the default) or "channels_first"
    (`(batch, channels, *spatial)`); see `set_image_data_format`."""
    return _image_data_format


@export("loopax.backend.set_image_data_format", "loopax.config.set_image_data_format")
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


@export("loopax.config.set_backend")
def set_backend(backend: str) -> None:
    """Keras's backend switch: loopax runs on JAX only, so "jax" is accepted (nothing
    changes) and any other backend is an error.

    Args:
        backend: The backend's name.

    Raises:
        ValueError: `backend` is not "jax".
    """
    if str(backend).lower() != "jax":
        raise ValueError(f"set_backend({backend!r}): loopax runs on JAX only. To run on "
                         f"{backend}, use Keras itself (`KERAS_BACKEND={backend}`); loopax "
                         "accepts only set_backend('jax').")


# Flash attention. loopax has no flash kernel of its own: XLA picks the attention
# kernel, so the switch is kept (as Keras reports it) and changes no number.
_flash_attention: bool | None = None


@export("loopax.config.enable_flash_attention")
def enable_flash_attention() -> None:
    """Lets attention layers try flash attention (the default; Keras stores None)."""
    global _flash_attention
    _flash_attention = None


@export("loopax.config.disable_flash_attention")
def disable_flash_attention() -> None:
    """Tells attention layers not to use flash attention."""
    global _flash_attention
    _flash_attention = False


@export("loopax.config.is_flash_attention_enabled")
def is_flash_attention_enabled() -> bool | None:
    """Returns False after `disable_flash_attention()`, otherwise None (Keras's values).
    On loopax XLA picks the attention kernel either way (a no-op switch)."""
    return _flash_attention


# Traceback filtering: loopax's own frames are not filtered, JAX's internal frames
# are (jax's `jax_traceback_filtering`); the switch turns that on ("auto") or off.
@export("loopax.config.enable_traceback_filtering")
def enable_traceback_filtering() -> None:
    """Hides JAX's internal frames in tracebacks (the default)."""
    jax.config.update("jax_traceback_filtering", "auto")


@export("loopax.config.disable_traceback_filtering")
def disable_traceback_filtering() -> None:
    """Shows every frame, JAX's internal ones included, in tracebacks."""
    jax.config.update("jax_traceback_filtering", "off")


@export("loopax.config.is_traceback_filtering_enabled")
def is_traceback_filtering_enabled() -> bool:
    """Returns whether tracebacks are filtered (True unless
    `disable_traceback_filtering()`)."""
    return jax.config.jax_traceback_filtering != "off"


@export("loopax.config.is_nnx_enabled")
def is_nnx_enabled() -> bool:
    """Returns False: Keras's switch for Flax NNX variables on JAX; loopax's variables
    are its own."""
    return False


@export("loopax.config.enable_unsafe_deserialization")
def enable_unsafe_deserialization() -> None:
    """Keras's switch that lets `load_model` run a `Lambda`'s saved bytecode. loopax
    never runs code from a file (docs/saving.md), so there is nothing to unlock: a
    no-op kept so Keras scripts run."""


# Debugging caps on fit()/evaluate()/predict() (Keras's `set_max_epochs`,
# `set_max_steps_per_epoch`; also read from KERAS_MAX_EPOCHS / KERAS_MAX_STEPS_PER_EPOCH).
def _int_from_environment(name):
    value = os.environ.get(name)
    return int(value) if value else None


_max_epochs = _int_from_environment("KERAS_MAX_EPOCHS")
_max_steps_per_epoch = _int_from_environment("KERAS_MAX_STEPS_PER_EPOCH")


@export("loopax.config.set_max_epochs")
def set_max_epochs(max_epochs: int | None) -> None:
    """Caps the epochs of every `fit()`, for quick debugging runs.

    Args:
        max_epochs: The most epochs a `fit()` runs, or None for no cap.
    """
    global _max_epochs
    _max_epochs = max_epochs


@export("loopax.config.set_max_steps_per_epoch")
def set_max_steps_per_epoch(max_steps_per_epoch: int | None) -> None:
    """Caps the steps of every epoch of `fit()`, `evaluate()` and `predict()`, for quick
    debugging runs.

    Args:
        max_steps_per_epoch: The most batches an epoch runs, or None for no cap.
    """
    global _max_steps_per_epoch
    _max_steps_per_epoch = max_steps_per_epoch


@export("loopax.config.max_epochs")
def max_epochs() -> int | None:
    """Returns the cap `set_max_epochs` (or `KERAS_MAX_EPOCHS`) set, or None."""
    return _max_epochs


@export("loopax.config.max_steps_per_epoch")
def max_steps_per_epoch() -> int | None:
    """Returns the cap `set_max_steps_per_epoch` (or `KERAS_MAX_STEPS_PER_EPOCH`) set, or
    None."""
    return _max_steps_per_epoch


def capped_epochs(epochs: int) -> int:
    """`epochs`, lowered to `max_epochs()` (with Keras's warning) when that is smaller."""
    if _max_epochs and _max_epochs < epochs:
        warnings.warn(f"Limiting epochs to {_max_epochs} (loopax.config.set_max_epochs).",
                      stacklevel=3)
        return _max_epochs
    return epochs


def capped_steps(steps: int | None, available: int | None = None) -> int | None:
    """`steps` (None: all the data), lowered to `max_steps_per_epoch()` (with Keras's
    warning) when that is set and smaller. `available`: the batches the data holds
    when known; a cap at or above it leaves `steps` None (Keras runs the data out).
    """
    if not _max_steps_per_epoch or (steps and steps <= _max_steps_per_epoch):
        return steps
    warnings.warn(f"Limiting steps_per_epoch to {_max_steps_per_epoch} "
                  "(loopax.config.set_max_steps_per_epoch).", stacklevel=3)
    if steps is None and available is not None and available <= _max_steps_per_epoch:
        return None
    return _max_steps_per_epoch


# How long a call waits for another thread's call on the same model (trainers/in_use.py).
_model_wait_timeout = 60.0


@export("loopax.config.set_model_wait_timeout")
def set_model_wait_timeout(seconds: float) -> None:
    """Sets how long a call waits for another thread's call on the same model.

    `fit`, `evaluate`, `predict`, `save`, `save_weights` and `load_weights` use a model one
    call at a time. A call that finds another thread's call running waits for it to finish,
    up to `seconds`, then raises an error naming both calls; 0 refuses at once.

    Args:
        seconds: The longest wait, a number >= 0 (default 60).
    """
    global _model_wait_timeout
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
        raise ValueError(f"set_model_wait_timeout(seconds={seconds!r}): expected a number "
                         ">= 0 (0 refuses at once).")
    _model_wait_timeout = float(seconds)


@export("loopax.config.model_wait_timeout")
def model_wait_timeout() -> float:
    """Returns the seconds a call waits for another thread's call on the same model."""
    return _model_wait_timeout
