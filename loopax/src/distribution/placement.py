"""Putting arrays where the current distribution wants them.

The hooks the rest of loopax calls (each a no-op without a distribution):

- `on_variable_created(variable)` (state.py): a new Variable gets its layout
  (`variable._layout`) and its value is placed there; `place_assigned` keeps an
  assignment on that layout. Inside `replicated()` (metric variables) the
  layout is replicated; inside `layout_like(reference)` (optimizer slots) it is
  the reference variable's when the shapes agree, else replicated.
- `prepare_model(model, batch, training)` (trainer, before a pass): checks the
  layout map against the model's variable paths and the batch size against the
  data-parallel degree; places variables created before the distribution.
- `shard_step(step, groups)` (step_functions): the compiled step splits each
  batch along the batch axis and keeps every state value on its variable's
  layout, so the state stays sharded from one fused call to the next.
- `put_batch` / `put_replicated` / `to_host`: batches and device-resident data
  entering, outputs leaving.

Public helpers for custom loops: `distribute_tensor` and `distribute_batch`.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from loopax.src.api_export import export
from loopax.src.distribution.device_mesh import TensorLayout, check_layout_fits
from loopax.src.distribution.distributions import (
    ModelParallel,
    distribution,
    replicated_layout,
)


class _Overrides(threading.local):
    def __init__(self):
        self.stack = []


_overrides = _Overrides()


@contextlib.contextmanager
def replicated():
    """Variables created inside are replicated (metric accumulators)."""
    _overrides.stack.append(("replicated", None))
    try:
        yield
    finally:
        _overrides.stack.pop()


@contextlib.contextmanager
def layout_like(reference):
    """Variables created inside take `reference`'s layout when shaped like it
    (optimizer slots), else are replicated."""
    _overrides.stack.append(("like", reference))
    try:
        yield
    finally:
        _overrides.stack.pop()


def variable_layout(dist, variable) -> TensorLayout:
    """The layout `variable` has under `dist` (checked against its shape)."""
    layout = getattr(variable, "_layout", None)
    if layout is not None and layout.device_mesh == dist.device_mesh:
        return layout
    layout = dist.get_variable_layout(variable)
    if layout.device_mesh is None:
        layout = TensorLayout(layout.axes, dist.device_mesh)
    check_layout_fits(layout, tuple(variable.shape), f"Variable {variable.path!r}")
    return layout


def _new_variable_layout(dist, variable) -> TensorLayout:
    kind, reference = _overrides.stack[-1] if _overrides.stack else (None, None)
    if kind == "replicated":
        return replicated_layout(dist.device_mesh, len(variable.shape))
    if kind == "like":
        if tuple(reference.shape) == tuple(variable.shape):
            return variable_layout(dist, reference)
        return replicated_layout(dist.device_mesh, len(variable.shape))
    return variable_layout(dist, variable)


def on_variable_created(variable) -> None:
    """Gives a new Variable its layout and places its value (state.py's hook)."""
    dist = distribution()
    if dist is None:
        return
    layout = _new_variable_layout(dist, variable)
    variable._layout = layout
    with jax.ensure_compile_time_eval():
        variable._value = _put(variable._value, layout.backend_layout)


def place_assigned(value, layout):
    """An assigned value, moved onto the Variable's layout if it is elsewhere."""
    return _put(value, layout.backend_layout)


def _put(value, sharding):
    if getattr(value, "sharding", None) == sharding:
        return value
    if jax.process_count() > 1 and isinstance(value, jax.Array) \
            and not value.is_fully_addressable:
        return jax.jit(lambda a: a, out_shardings=sharding)(value)
    return jax.device_put(np.asarray(value) if jax.process_count() > 1 else value, sharding)


# --------------------------------------------------------------------------
# fit / evaluate / predict
# --------------------------------------------------------------------------

def prepare_model(model, batch=None, training=False) -> None:
    """Before a pass: a warning for a layout key no variable matches, a clear
    error for a training batch the data-parallel degree does not divide; places
    the model's variables created before the distribution was set."""
    dist = distribution()
    if dist is None:
        return
    variables = list(model.variables)
    if isinstance(dist, ModelParallel):
        warn_unmatched_keys(dist.layout_map, model, variables)
    for variable in variables:
        layout = variable_layout(dist, variable)
        if getattr(variable, "_layout", None) != layout:
            variable._layout = layout
            variable._value = _put(variable._value, layout.backend_layout)
    if training and batch is not None:
        check_batch_divisible(dist, batch, "fit()")


def warn_unmatched_keys(layout_map, model, variables) -> None:
    """Keras applies the layout map keys that match and ignores the others; loopax
    does the same and warns once per key and model (a typo leaves a variable
    replicated)."""
    warned = layout_map.warned_unmatched
    name = getattr(model, "name", "")
    layers = [model, *getattr(model, "submodules", ())]
    outputs = [f"{layer.scope_path}/output" for layer in layers if hasattr(layer, "scope_path")]
    unmatched = [k for k in layout_map.unmatched_keys([v.path for v in variables] + outputs)
                 if (name, k) not in warned]
    if not unmatched:
        return
    warned.update((name, k) for k in unmatched)
    paths = ", ".join(repr(v.path) for v in variables[:12])
    more = f" (and {len(variables) - 12} more)" if len(variables) > 12 else ""
    warnings.warn(
        f"ModelParallel: layout map key(s) {unmatched} match no variable or layer output "
        f"of model {name!r}, "
        f"so they place nothing (as in Keras; the variables they were meant for stay "
        f"replicated). Keys are variable paths or regexes that must match a whole path; "
        f"the paths are {paths}{more}.", UserWarning, stacklevel=3)


def state_value(variable, value):
    """`value` of `variable` on its layout, as a compiled step receives it (the
    same shardings every call: one compile, and the state stays put)."""
    dist = distribution()
    if dist is None:
        return value
    return _put(value, variable_layout(dist, variable).backend_layout)


def check_batch_divisible(dist, batch, what) -> None:
    degree = dist.num_model_replicas
    for leaf in jax.tree_util.tree_leaves(batch):
        shape = np.shape(leaf)
        if shape and shape[0] % degree:
            raise ValueError(
                f"{what}: the batch size {shape[0]} is not divisible by the data-parallel "
                f"degree {degree} (mesh axis {dist.batch_dim_name!r} of "
                f"{dist.device_mesh}). Use a batch_size that is a multiple of {degree}.")


def shard_step(step, groups):
    """`step(state, batch) -> (out, state)` keeping each state value on its
    variable's layout and splitting the batch along the batch axis (no-op
    without a distribution)."""
    dist = distribution()
    if dist is None:
        return step
    targets = [[variable_layout(dist, v).backend_layout for v in group] for group in groups]

    def sharded(state, data):
        out, new_state = step(state, constrain_batch(dist, data))
        new_state = tuple(
            [jax.lax.with_sharding_constraint(value, sharding)
             for value, sharding in zip(values, shardings)]
            for values, shardings in zip(new_state, targets))
        return out, new_state

    return sharded


def calls_must_wait() -> bool:
    """Whether each compiled call must wait for its results: the current
    distribution spans several CPU devices.

    On CPU devices that share the host's cores (simulated with
    `--xla_force_host_platform_device_count`), XLA runs each device's program
    on a shared thread pool; with several calls queued (JAX dispatches
    asynchronously) the devices' threads can all wait in one call's all-reduce
    while a device's part of it waits for a thread, and XLA aborts after 40 s.
    Waiting for each call avoids that; the host could not run ahead anyway."""
    dist = distribution()
    if dist is None:
        return False
    devices = dist.device_mesh.devices.reshape(-1)
    return len(devices) > 1 and all(d.platform == "cpu" for d in devices)


def constrain_batch(dist, data):
    """Inside a compiled step: the batch split along dimension 0 (a batch the
    degree does not divide, such as a last partial one, stays replicated)."""
    degree = dist.num_model_replicas

    def constrain(leaf):
        shape = getattr(leaf, "shape", ())
        if not shape or shape[0] % degree:
            return leaf
        return jax.lax.with_sharding_constraint(leaf, _batch_sharding(dist, len(shape), 0))

    return jax.tree_util.tree_map(constrain, data)


def _batch_sharding(dist, ndim, axis):
    spec = [None] * ndim
    spec[axis] = dist.batch_dim_name
    return NamedSharding(dist.device_mesh.backend_mesh, PartitionSpec(*spec))


def put_replicated(tree):
    """Device-resident data (a dataset, an epoch order) on every device."""
    dist = distribution()
    if dist is None:
        return jax.device_put(tree)
    sharding = NamedSharding(dist.device_mesh.backend_mesh, PartitionSpec())
    return jax.device_put(tree, sharding)


def put_batch(tree, batch_axis=0, strict=False):
    """Host batches onto the devices, split along `batch_axis` (1 for stacked
    chunks). In a multi-process job each process passes its own rows and gets
    global arrays (`jax.make_array_from_process_local_data`). A batch the
    degree does not divide is replicated, or an error when `strict`."""
    dist = distribution()
    if dist is None:
        return jax.device_put(tree)
    degree = dist.num_model_replicas
    processes = jax.process_count()

    def put(leaf):
        leaf = np.asarray(leaf) if not isinstance(leaf, jax.Array) else leaf
        shape = np.shape(leaf)
        if len(shape) <= batch_axis:
            return _put(leaf, NamedSharding(dist.device_mesh.backend_mesh, PartitionSpec()))
        rows = shape[batch_axis] * processes
        if rows % degree:
            if strict or processes > 1:
                check_batch_divisible(dist, [np.empty((rows,))], "distribute_batch")
            return _put(leaf, NamedSharding(dist.device_mesh.backend_mesh, PartitionSpec()))
        sharding = _batch_sharding(dist, len(shape), batch_axis)
        if processes > 1:
            return jax.make_array_from_process_local_data(sharding, np.asarray(leaf))
        return jax.device_put(leaf, sharding)

    return jax.tree_util.tree_map(put, tree)


def to_host(tree):
    """Outputs as NumPy; in a multi-process job every process gets all rows
    (each process's rows in process order)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils
        return jax.tree_util.tree_map(
            np.asarray, multihost_utils.process_allgather(tree, tiled=True))
    return jax.tree_util.tree_map(np.asarray, jax.device_get(tree))


# --------------------------------------------------------------------------
# public helpers for custom loops
# --------------------------------------------------------------------------

@export("loopax.distribution.distribute_tensor")
def distribute_tensor(tensor, layout):
    """`tensor` laid out as `layout` (a TensorLayout or a jax Sharding): inside a
    compiled function a sharding constraint, outside a transfer.

    Args:
        tensor: An array (or a Variable, whose value is taken), concrete or traced.
        layout: A `TensorLayout` (one mesh axis name or None per dimension) or a
            `jax.sharding.Sharding`.

    Returns:
        The array, laid out as `layout` (same shape and dtype).

    Raises:
        ValueError: a `TensorLayout` that does not fit the tensor's shape (wrong
            number of entries, unknown mesh axis, or a size that does not divide).
    """
    sharding = layout.backend_layout if isinstance(layout, TensorLayout) else layout
    if isinstance(layout, TensorLayout):
        check_layout_fits(layout, tuple(np.shape(tensor)), "distribute_tensor: the tensor")
    value = getattr(tensor, "value", tensor) if hasattr(tensor, "path") else tensor
    if isinstance(value, jax.core.Tracer):
        return jax.lax.with_sharding_constraint(value, sharding)
    return _put(value, sharding)


@export("loopax.distribution.distribute_batch")
def distribute_batch(batch, distribution_=None):
    """A (process-local) batch — arrays or a tuple/dict of arrays — as global
    arrays split along dimension 0 over the distribution's batch axis, ready
    for a jitted step. The batch size (times the number of processes) must be
    divisible by the data-parallel degree.

    Args:
        batch: An array, or a tuple/list/dict of arrays with the same first dimension.
        distribution_: The distribution to use; None (the default) is the current one.

    Returns:
        The batch, same structure, as global `jax.Array`s sharded along dimension 0.

    Raises:
        ValueError: no distribution is set, or the batch size does not divide over the
            data-parallel degree.
    """
    dist = distribution_ or distribution()
    if dist is None:
        raise ValueError("distribute_batch: no distribution is set; call "
                         "loopax.distribution.set_distribution(...) or pass one.")
    with dist.scope():
        return put_batch(batch, 0, strict=True)
