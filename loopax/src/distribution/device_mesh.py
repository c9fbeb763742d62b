"""Devices, meshes and tensor layouts (Keras's names over `jax.sharding`).

A `DeviceMesh` is a named grid of devices (`jax.sharding.Mesh`); a
`TensorLayout` says, per dimension of an array, which mesh axis (or None)
splits it (`jax.sharding.NamedSharding` with a `PartitionSpec`).
"""

from __future__ import annotations

import math

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from loopax.src.api_export import export


def _devices_of(device_type=None):
    if device_type is None:
        return jax.devices()
    try:
        return jax.devices(device_type.lower())
    except RuntimeError as e:
        raise ValueError(f"list_devices: no {device_type!r} devices here ({e}).") from None


@export("loopax.distribution.list_devices")
def list_devices(device_type=None) -> list[str]:
    """All devices (of every process) of `device_type` ("cpu", "gpu", "tpu"; default:
    the default backend's), as strings `"cpu:0"`, `"gpu:3"`.

    Args:
        device_type: "cpu", "gpu" or "tpu" (any case), or None for the default
            backend's devices.

    Returns:
        A list of str, one per device.

    Raises:
        ValueError: there are no devices of `device_type` here.
    """
    return [f"{d.platform}:{d.id}" for d in _devices_of(device_type)]


@export("loopax.distribution.get_device_count")
def get_device_count(device_type=None) -> int:
    """How many devices `list_devices(device_type)` returns.

    Args:
        device_type: "cpu", "gpu" or "tpu" (any case), or None for the default
            backend's devices.

    Returns:
        An int.

    Raises:
        ValueError: there are no devices of `device_type` here.
    """
    return len(_devices_of(device_type))


def _to_jax_device(device):
    if isinstance(device, jax.Device):
        return device
    if isinstance(device, str) and ":" in device:
        platform, _, index = device.partition(":")
        for d in _devices_of(platform):
            if d.id == int(index):
                return d
        raise ValueError(f"DeviceMesh: no device {device!r}; list_devices() gives "
                         f"{list_devices(platform)}.")
    raise ValueError(f"DeviceMesh: a device is a jax.Device or a string like 'cpu:0', "
                     f"got {device!r}.")


@export("loopax.distribution.DeviceMesh")
class DeviceMesh:
    """A grid of devices with a name per axis.

    Args:
        shape: the grid's shape, e.g. `(8,)` or `(2, 4)`.
        axis_names: one name per axis, e.g. `("batch", "model")`.
        devices: the devices (strings from `list_devices()` or `jax.Device`s),
            as many as the shape holds; default: all devices.
    """

    def __init__(self, shape, axis_names, devices=None):
        shape = tuple(int(s) for s in shape) if shape else ()
        axis_names = tuple(axis_names) if axis_names else ()
        if not shape or not axis_names:
            raise ValueError(f"DeviceMesh: shape and axis_names must not be empty; got "
                             f"shape={shape}, axis_names={axis_names}.")
        if len(shape) != len(axis_names):
            raise ValueError(f"DeviceMesh: shape {shape} has {len(shape)} axes but "
                             f"axis_names {axis_names} names {len(axis_names)}.")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"DeviceMesh: axis_names {axis_names} repeat a name.")
        if devices is None:
            devices = jax.devices()
        flat = [_to_jax_device(d) for d in np.asarray(devices, dtype=object).reshape(-1)]
        if math.prod(shape) != len(flat):
            raise ValueError(
                f"DeviceMesh: shape {shape} holds {math.prod(shape)} devices but "
                f"{len(flat)} were given (there are {jax.device_count()} devices; run "
                "with XLA_FLAGS=--xla_force_host_platform_device_count=N for N CPU "
                "devices).")
        self._shape = shape
        self._axis_names = axis_names
        self._devices = np.asarray(flat, dtype=object).reshape(shape)
        self._jax_mesh = Mesh(self._devices, axis_names)

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def axis_names(self) -> tuple:
        return self._axis_names

    @property
    def devices(self) -> np.ndarray:
        return self._devices

    @property
    def backend_mesh(self) -> Mesh:
        """The `jax.sharding.Mesh`."""
        return self._jax_mesh

    def axis_size(self, axes) -> int:
        """Devices along one axis name, or the product over a tuple of names."""
        names = axes if isinstance(axes, tuple) else (axes,)
        return math.prod(self._shape[self._axis_names.index(n)] for n in names)

    def __eq__(self, other):
        return isinstance(other, DeviceMesh) and self._jax_mesh == other._jax_mesh

    def __hash__(self):
        return hash(self._jax_mesh)

    def __repr__(self):
        return f"<DeviceMesh shape={self._shape}, axis_names={self._axis_names}>"


@export("loopax.distribution.TensorLayout")
class TensorLayout:
    """Which mesh axis splits each dimension of an array.

    Args:
        axes: one entry per dimension: a mesh axis name, a tuple of names, or
            None (not split).
        device_mesh: the `DeviceMesh`; a `LayoutMap` fills it in when None.
    """

    def __init__(self, axes, device_mesh=None):
        if isinstance(axes, str):
            axes = (axes,)
        self._axes = tuple(tuple(a) if isinstance(a, list) else a for a in axes)
        self._device_mesh = None
        if device_mesh is not None:
            self.device_mesh = device_mesh

    @property
    def axes(self) -> tuple:
        return self._axes

    @property
    def device_mesh(self):
        return self._device_mesh

    @device_mesh.setter
    def device_mesh(self, device_mesh):
        if self._device_mesh is not None and device_mesh != self._device_mesh:
            raise ValueError(f"TensorLayout{self._axes}: its device mesh is already "
                             f"{self._device_mesh}.")
        self._device_mesh = device_mesh
        check_axes_exist(self, "TensorLayout")

    @property
    def backend_layout(self) -> NamedSharding:
        """The `jax.sharding.NamedSharding`."""
        if self._device_mesh is None:
            raise ValueError(f"TensorLayout{self._axes} has no device mesh; pass "
                             "`device_mesh=` or put it in a LayoutMap.")
        return NamedSharding(self._device_mesh.backend_mesh, PartitionSpec(*self._axes))

    def __eq__(self, other):
        return (isinstance(other, TensorLayout) and self._axes == other._axes
                and self._device_mesh == other._device_mesh)

    def __hash__(self):
        return hash(self._axes)

    def __repr__(self):
        return f"<TensorLayout axes={self._axes}, device_mesh={self._device_mesh}>"


def _names_in(entry):
    if entry is None:
        return ()
    return entry if isinstance(entry, tuple) else (entry,)


def check_axes_exist(layout: TensorLayout, where: str) -> None:
    """A clear error when `layout` names an axis its mesh does not have."""
    mesh = layout.device_mesh
    if mesh is None:
        return
    for entry in layout.axes:
        for name in _names_in(entry):
            if name not in mesh.axis_names:
                raise ValueError(
                    f"{where}: the layout {layout.axes} names mesh axis {name!r}, but the "
                    f"device mesh has axes {mesh.axis_names}. Use one of those names or "
                    "None.")


def check_layout_fits(layout: TensorLayout, shape: tuple, what: str) -> None:
    """A clear error unless `layout` has one entry per dimension of `shape` and each
    split dimension divides evenly over its mesh axes. `what` names the array."""
    if len(layout.axes) != len(shape):
        raise ValueError(
            f"{what} has shape {tuple(shape)} ({len(shape)} dimensions) but its layout "
            f"{layout.axes} gives {len(layout.axes)} entries: give one mesh axis name "
            "or None per dimension.")
    check_axes_exist(layout, what)
    for dim, (size, entry) in enumerate(zip(shape, layout.axes)):
        if entry is None:
            continue
        parts = layout.device_mesh.axis_size(entry)
        if size % parts:
            raise ValueError(
                f"{what} has shape {tuple(shape)}: dimension {dim} (size {size}) is not "
                f"divisible by mesh axis {entry!r} of size {parts}. Choose a size that "
                f"is a multiple of {parts}, another axis, or None for that dimension.")
