"""`loopax.distribution` (Keras's `keras.distribution`): data and model
parallelism, and multi-process jobs, on `jax.sharding` / `jax.distributed`."""

from loopax.src.distribution import (
    DataParallel,
    DeviceMesh,
    Distribution,
    LayoutMap,
    ModelParallel,
    TensorLayout,
    distribute_batch,
    distribute_tensor,
    distribution,
    get_device_count,
    initialize,
    list_devices,
    set_distribution,
)

__all__ = [
    "DataParallel", "DeviceMesh", "Distribution", "LayoutMap", "ModelParallel",
    "TensorLayout", "distribute_batch", "distribute_tensor", "distribution",
    "get_device_count", "initialize", "list_devices", "set_distribution",
]
