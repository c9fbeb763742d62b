"""Data and model parallelism on `jax.sharding` (Keras's `keras.distribution`)."""

from loopax.src.distribution.device_mesh import (
    DeviceMesh,
    TensorLayout,
    get_device_count,
    list_devices,
)
from loopax.src.distribution.distributions import (
    DataParallel,
    Distribution,
    ModelParallel,
    distribution,
    set_distribution,
)
from loopax.src.distribution.layout_map import LayoutMap
from loopax.src.distribution.multi_host import initialize
from loopax.src.distribution.placement import distribute_batch, distribute_tensor

__all__ = [
    "DataParallel", "DeviceMesh", "Distribution", "LayoutMap", "ModelParallel",
    "TensorLayout", "distribute_batch", "distribute_tensor", "distribution",
    "get_device_count", "initialize", "list_devices", "set_distribution",
]
