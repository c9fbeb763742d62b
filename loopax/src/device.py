"""`loopax.device`: run the ops of a block on one device (Keras's `keras.device`)."""

import jax


def device(device_name):
    """A context manager placing new arrays and computations on one device.

    Args:
        device_name: `"cpu"`, `"gpu:1"`, `"tpu:0"` (type and index, any case) or a
            `jax.Device`.

    Returns:
        `jax.default_device(...)` for that device, to use in a `with` block.

    Raises:
        ValueError: `device_name` is neither, or names no device JAX sees.
    """
    return jax.default_device(_to_jax_device(device_name))


def _to_jax_device(device_name):
    if isinstance(device_name, jax.Device):
        return device_name
    if not isinstance(device_name, str):
        raise ValueError("device(): `device_name` must be a string like 'gpu:0' or a "
                         f"jax.Device, got {device_name!r}.")
    kind, _, index = device_name.lower().partition(":")
    index = int(index) if index else 0
    try:
        devices = jax.devices(kind)
    except RuntimeError:
        devices = []
    for candidate in devices:
        if candidate.id == index:
            return candidate
    seen = ", ".join(f"{d.platform}:{d.id}" for d in jax.devices())
    raise ValueError(f"device({device_name!r}): no such device; JAX sees {seen}.")
