"""`DataParallel`, `ModelParallel` and the current distribution.

A distribution decides where arrays live: each Variable gets a layout when it
is created (`get_variable_layout`), each batch is split along its first
dimension over the mesh axis `batch_dim_name` (`get_data_layout`).
"""

from __future__ import annotations

import contextlib
import warnings

import jax
import numpy as np

from loopax.src.api_export import export
from loopax.src.distribution import multi_host
from loopax.src.distribution.device_mesh import DeviceMesh, TensorLayout
from loopax.src.distribution.layout_map import LayoutMap

DEFAULT_BATCH_DIM_NAME = "batch"

_current = None


@export("loopax.distribution.distribution")
def distribution():
    """Returns the current distribution (None: everything on the default device)."""
    return _current


@export("loopax.distribution.set_distribution")
def set_distribution(value):
    """Makes `value` (a Distribution, or None to clear) the current distribution.
    Set it before creating the model: Variables are placed when created.

    Args:
        value: A `DataParallel`/`ModelParallel` distribution, or None.

    Raises:
        TypeError: `value` is neither a Distribution nor None.
    """
    global _current
    if value is not None and not isinstance(value, Distribution):
        raise TypeError(f"set_distribution expects a Distribution or None, got "
                        f"{type(value).__name__}.")
    _current = value


@export("loopax.distribution.Distribution")
class Distribution:
    """Where Variables and batches live on a `DeviceMesh`.

    Args:
        device_mesh: the `DeviceMesh`.
        batch_dim_name: the mesh axis that splits batches (data parallelism).
        auto_shard_dataset: in a multi-process job, `distribute_dataset` gives
            each process its own share of in-memory data; False when each
            process already loads its own share.
    """

    def __init__(self, device_mesh, batch_dim_name=None, auto_shard_dataset=True):
        if not isinstance(device_mesh, DeviceMesh):
            raise TypeError(f"{type(self).__name__}: device_mesh must be a DeviceMesh, got "
                            f"{type(device_mesh).__name__}.")
        batch_dim_name = batch_dim_name or device_mesh.axis_names[0]
        if batch_dim_name not in device_mesh.axis_names:
            raise ValueError(
                f"{type(self).__name__}: batch_dim_name={batch_dim_name!r} is not an axis "
                f"of the device mesh {device_mesh.axis_names}.")
        self._device_mesh = device_mesh
        self._batch_dim_name = batch_dim_name
        self.auto_shard_dataset = bool(auto_shard_dataset)

    @property
    def device_mesh(self) -> DeviceMesh:
        return self._device_mesh

    @property
    def batch_dim_name(self) -> str:
        return self._batch_dim_name

    @property
    def num_processes(self) -> int:
        return multi_host.num_processes()

    @property
    def num_model_replicas(self) -> int:
        """The data-parallel degree: devices along the batch axis."""
        return self._device_mesh.axis_size(self._batch_dim_name)

    def get_data_layout(self, data_shape) -> TensorLayout:
        """Batches are split along dimension 0 over the batch axis."""
        axes = [None] * len(data_shape)
        if axes:
            axes[0] = self._batch_dim_name
        return TensorLayout(tuple(axes), self._device_mesh)

    def get_variable_layout(self, variable) -> TensorLayout:
        """The layout of a Variable (anything with `path` and `shape`)."""
        return replicated_layout(self._device_mesh, len(variable.shape))

    def get_tensor_layout(self, path):
        """The layout of an intermediate tensor named `path`, or None."""
        return None

    @contextlib.contextmanager
    def scope(self):
        """`with d.scope():` makes `d` the current distribution inside."""
        previous = distribution()
        set_distribution(self)
        try:
            yield self
        finally:
            set_distribution(previous)

    def distribute_dataset(self, dataset):
        """This process's share of `dataset` in a multi-process job.

        In-memory data (an array, or a tuple/list/dict of arrays with the same
        number of rows) is cut into `num_processes` equal contiguous blocks of
        rows (the remainder dropped, with a warning) and this process's block
        is returned. With one process, or `auto_shard_dataset=False`, the data
        comes back unchanged. Other data (generators, datasets) must already be
        per process: it is returned unchanged.
        """
        count = self.num_processes
        if count == 1 or not self.auto_shard_dataset:
            return dataset
        leaves = _leaves(dataset)
        if not leaves or not all(hasattr(a, "shape") for a in leaves):
            return dataset
        rows = {int(np.shape(a)[0]) for a in leaves}
        if len(rows) != 1:
            raise ValueError(f"distribute_dataset: the arrays have different numbers of "
                             f"rows {sorted(rows)}.")
        total = rows.pop()
        share = total // count
        if share * count != total:
            warnings.warn(f"distribute_dataset: {total} rows do not split evenly over "
                          f"{count} processes; the last {total - share * count} are dropped "
                          "so that every process runs the same number of steps.",
                          stacklevel=2)
        lo = multi_host.process_id() * share
        return _map(lambda a: a[lo:lo + share], dataset)

    def __repr__(self):
        return (f"<{type(self).__name__} mesh={self._device_mesh}, "
                f"batch_dim_name={self._batch_dim_name!r}>")


@export("loopax.distribution.DataParallel")
class DataParallel(Distribution):
    """Every Variable replicated on every device; each batch split over them.

    Args:
        device_mesh: a 1-D `DeviceMesh` (a multi-axis mesh uses its first axis
            for the batch, with a warning).
        devices: the devices of a 1-D mesh named "batch" (instead of a mesh).
        Default: all devices, in a mesh with the axis "batch".
    """

    def __init__(self, device_mesh=None, devices=None, auto_shard_dataset=True):
        if device_mesh is not None and devices is not None:
            raise ValueError("DataParallel: pass `device_mesh` or `devices`, not both.")
        if device_mesh is None:
            devices = list(devices) if devices is not None else None
            count = len(devices) if devices is not None else None
            if count is None:
                count = jax.device_count()
            device_mesh = DeviceMesh((count,), (DEFAULT_BATCH_DIM_NAME,), devices)
        elif isinstance(device_mesh, DeviceMesh) and len(device_mesh.shape) != 1:
            warnings.warn(f"DataParallel expects a 1-D device mesh, got shape "
                          f"{device_mesh.shape}; its first axis "
                          f"{device_mesh.axis_names[0]!r} splits the batch.", stacklevel=2)
        super().__init__(device_mesh, None, auto_shard_dataset)


@export("loopax.distribution.ModelParallel")
class ModelParallel(Distribution):
    """Variables split as a `LayoutMap` says (the rest replicated); batches split
    along `batch_dim_name`.

    Args:
        layout_map: a `LayoutMap` (its mesh is the distribution's mesh).
        batch_dim_name: the mesh axis that splits batches (default: the first).
    """

    def __init__(self, *, layout_map=None, batch_dim_name=None, auto_shard_dataset=True,
                 **kwargs):
        device_mesh = kwargs.pop("device_mesh", None)
        if kwargs:
            raise TypeError(f"ModelParallel got unexpected arguments {sorted(kwargs)}.")
        if not isinstance(layout_map, LayoutMap):
            raise ValueError("ModelParallel needs `layout_map=` a LayoutMap, got "
                             f"{type(layout_map).__name__}.")
        if device_mesh is not None and device_mesh != layout_map.device_mesh:
            raise ValueError("ModelParallel: `device_mesh` differs from the layout map's "
                             "mesh; leave it out (the layout map's is used).")
        super().__init__(layout_map.device_mesh, batch_dim_name, auto_shard_dataset)
        self._layout_map = layout_map

    @property
    def layout_map(self) -> LayoutMap:
        return self._layout_map

    def get_variable_layout(self, variable) -> TensorLayout:
        layout = self._layout_map.get(variable.path)
        if layout is None:
            return replicated_layout(self._device_mesh, len(variable.shape))
        return layout

    def get_tensor_layout(self, path):
        return self._layout_map.get(path)


def replicated_layout(mesh, ndim) -> TensorLayout:
    return TensorLayout((None,) * ndim, mesh)


def _leaves(data):
    if isinstance(data, dict):
        return [x for v in data.values() for x in _leaves(v)]
    if isinstance(data, (list, tuple)):
        return [x for v in data for x in _leaves(v)]
    return [] if data is None else [data]


def _map(fn, data):
    if isinstance(data, dict):
        return {k: _map(fn, v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_map(fn, v) for v in data)
    return None if data is None else fn(data)
