"""Converting the trainer's logs (arrays, maybe on the device) to Python floats."""

import functools

import jax
import numpy as np


def logs_to_host(logs):
    """`logs` with every scalar as a Python float, fetched from the device in one go.

    Nested dicts are flattened into the top level (Keras); non-scalar arrays
    come back as NumPy arrays and strings stay strings. On an accelerator the
    copies of all arrays are started together before any is waited on (what
    `jax.device_get` does, without its per-call overhead).
    """
    if not logs:
        return {}
    flat = {}
    _flatten_into(flat, logs)
    arrays = [value for value in flat.values() if isinstance(value, jax.Array)]
    if len(arrays) > 1 and _on_accelerator():
        for array in arrays:
            array.copy_to_host_async()
    return {name: _to_float(value) for name, value in flat.items()}


@functools.cache
def _on_accelerator():
    return jax.default_backend() != "cpu"


def _flatten_into(out, logs):
    for name, value in logs.items():
        if isinstance(value, dict):
            _flatten_into(out, value)
        else:
            out[name] = value


def _to_float(value):
    if type(value) is float:
        return value
    if isinstance(value, (bool, int)):
        return float(value)
    if isinstance(value, (np.ndarray, np.generic, jax.Array)) or hasattr(value, "__array__"):
        array = np.asarray(value)
        if array.size == 1 and array.dtype.kind in "biuf":
            return float(array.item())
        return array
    return value
