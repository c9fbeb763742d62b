"""`tf.distribute` on `loopax.distribution`: a strategy is a `DataParallel`
distribution over its devices.

How it maps (and the one way it differs from TensorFlow): TensorFlow's
`MirroredStrategy` runs the step function once per replica, each on its slice
of the batch, and sums gradients and metric updates across replicas. loopax
runs it once, over the whole global batch, as one program XLA partitions
across the devices (SPMD): the batch is split along its first axis over the
devices, Variables are replicated, and XLA inserts the all-reduces. So
`strategy.run(fn, args)` calls `fn` once with global values and returns
global values; `tf.nn.compute_average_loss` divides by the global batch;
`strategy.reduce(SUM or MEAN, value, axis=None)` returns the value as it is
(with `axis`, it reduces that axis of the global value). Code written the
way the tutorials write it (per-example losses averaged with
`compute_average_loss`, summed with `reduce(SUM, ...)`) gives TensorFlow's
numbers, and the same numbers on one device and on eight. What differs: a
value that is not additive over the batch, returned from `run` and reduced
with `axis=None` (e.g. `reduce(SUM, tf.reduce_mean(loss))`, which TensorFlow
multiplies by the number of replicas), comes back once, not summed over
replicas; `experimental_local_results` splits batch-shaped values into the
replicas' rows and gives other values whole.

Variables created in `strategy.scope()` (a model, its optimizer, metrics)
are replicated on the strategy's devices; `fit()` inside the scope trains
data-parallel as `loopax.distribution.DataParallel` does.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import threading
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.distribution import multi_host, placement
from loopax.src.distribution.distributions import DataParallel
from loopax.src.state import Variable, _state
from loopax.src.tf_compat.runtime import _DEVICE_NAME
from loopax.src.tf_compat.tensors import Tensor, as_tensors


class ReduceOp(enum.Enum):
    """How `Strategy.reduce` combines values: `SUM` or `MEAN`."""
    SUM = "SUM"
    MEAN = "MEAN"

    @classmethod
    def from_variable_aggregation(cls, aggregation):
        name = str(getattr(aggregation, "name", aggregation)).upper()
        return cls.MEAN if "MEAN" in name else cls.SUM


def _reduce_op(op):
    if isinstance(op, ReduceOp):
        return op
    name = str(op).upper()
    if name in ("SUM", "MEAN"):
        return ReduceOp(name)
    raise ValueError(f"tf.distribute: reduce_op must be tf.distribute.ReduceOp.SUM or MEAN "
                     f"(or 'sum'/'mean'); got {op!r}.")


class InputContext:
    """What `distribute_datasets_from_function`'s `dataset_fn` is told: how many
    input pipelines (processes) there are, which one this is, and how many
    replicas take part in each step."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = int(num_input_pipelines)
        self.input_pipeline_id = int(input_pipeline_id)
        self.num_replicas_in_sync = int(num_replicas_in_sync)

    def get_per_replica_batch_size(self, global_batch_size):
        """`global_batch_size / num_replicas_in_sync` (it must divide)."""
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(
                f"InputContext.get_per_replica_batch_size: the global batch size "
                f"{global_batch_size} is not divisible by num_replicas_in_sync="
                f"{self.num_replicas_in_sync}; use a multiple of it.")
        return global_batch_size // self.num_replicas_in_sync

    def __repr__(self):
        return (f"InputContext(num_input_pipelines={self.num_input_pipelines}, "
                f"input_pipeline_id={self.input_pipeline_id}, "
                f"num_replicas_in_sync={self.num_replicas_in_sync})")


class InputOptions:
    """Accepted for TensorFlow compatibility (batches always go to the devices)."""

    def __init__(self, experimental_fetch_to_device=None, experimental_replication_mode=None,
                 experimental_place_dataset_on_device=False,
                 experimental_per_replica_buffer_size=1):
        self.experimental_fetch_to_device = experimental_fetch_to_device


class _CrossDeviceOps:
    """Accepted for TensorFlow compatibility: XLA chooses how to all-reduce."""

    def __init__(self, *args, **kwargs):
        pass


class HierarchicalCopyAllReduce(_CrossDeviceOps):
    """Accepted; XLA chooses the all-reduce."""


class NcclAllReduce(_CrossDeviceOps):
    """Accepted; XLA chooses the all-reduce."""


class ReductionToOneDevice(_CrossDeviceOps):
    """Accepted; XLA chooses the all-reduce."""


class CrossDeviceOps(_CrossDeviceOps):
    """Accepted; XLA chooses the all-reduce."""


# ---- the current strategy --------------------------------------------------------------

class _Context(threading.local):
    def __init__(self):
        self.strategies = []      # entered scopes, innermost last
        self.in_run = []          # the strategies whose `run` is executing


_context = _Context()


def get_strategy():
    """The strategy whose `scope()` is entered, else the default strategy (one
    replica, no distribution)."""
    return _context.strategies[-1] if _context.strategies else _DEFAULT


def has_strategy():
    """Whether a strategy's `scope()` (other than the default one's) is entered."""
    return bool(_context.strategies)


def in_cross_replica_context():
    """True outside `strategy.run` (while a non-default strategy's scope is entered)."""
    return has_strategy() and not _context.in_run


def get_replica_context():
    """Inside `strategy.run` (or with no strategy): the ReplicaContext; None in a
    strategy's scope outside `run` (cross-replica context), as TensorFlow."""
    if _context.in_run:
        return ReplicaContext(_context.in_run[-1])
    if has_strategy():
        return None
    return ReplicaContext(_DEFAULT)


def experimental_set_strategy(strategy):
    """Makes `strategy` current (as entering its scope, without leaving it); None clears."""
    while _context.strategies:
        _context.strategies[-1]._exit_scope()
    if strategy is not None:
        strategy._enter_scope()


class ReplicaContext:
    """What code inside `strategy.run` sees. loopax runs the function once over
    the global batch (see the module docstring), so there is one replica id, 0."""

    def __init__(self, strategy):
        self.strategy = strategy

    @property
    def num_replicas_in_sync(self):
        return self.strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return 0

    def all_reduce(self, reduce_op, value, options=None):
        """The value itself: it is already the global value."""
        _reduce_op(reduce_op)
        return as_tensors(value)


# ---- strategies ------------------------------------------------------------------------

def _jax_device(name):
    if isinstance(name, jax.Device):
        return name
    match = _DEVICE_NAME.match(str(name))
    if match is None:
        raise ValueError(f"tf.distribute: {name!r} is not a device name such as '/gpu:0'.")
    kind, index = match["type"].lower(), int(match["index"] or 0)
    try:
        devices = jax.local_devices(backend=kind)
    except RuntimeError:
        devices = []
    if index >= len(devices):
        raise ValueError(f"tf.distribute: this machine has no device {name!r} (its devices: "
                         f"{[f'{d.platform}:{d.id}' for d in jax.local_devices()]}); "
                         f"leave `devices` out to use all of them.")
    return devices[index]


class Strategy:
    """A set of devices that run each step together (TensorFlow's `tf.distribute.Strategy`).

    Built on `loopax.distribution.DataParallel` over the devices: see the module
    docstring for how `run` and `reduce` map.
    """

    def __init__(self, devices=None):
        devices = list(jax.local_devices() if devices is None else devices)
        if not devices:
            raise ValueError(f"{type(self).__name__}: `devices` is empty.")
        self._devices = devices
        self._distribution = DataParallel(devices=devices)
        self._variables = weakref.WeakSet()
        self._scope_tokens = []

    # ---- properties
    @property
    def num_replicas_in_sync(self):
        """The number of devices each step runs on."""
        return len(self._devices)

    @property
    def extended(self):
        return self

    @property
    def worker_devices(self):
        return tuple(f"{d.platform}:{d.id}" for d in self._devices)

    @property
    def distribution(self):
        """The `loopax.distribution.DataParallel` this strategy is."""
        return self._distribution

    # ---- scope
    def _record(self, variable):
        self._variables.add(variable)

    def _enter_scope(self):
        token = self._distribution.scope()
        token.__enter__()
        _context.strategies.append(self)
        _state.variable_creation_hooks.append(self._record)
        self._scope_tokens.append(token)

    def _exit_scope(self):
        token = self._scope_tokens.pop()
        _state.variable_creation_hooks.remove(self._record)
        _context.strategies.remove(self)
        token.__exit__(None, None, None)

    @contextlib.contextmanager
    def scope(self):
        """Inside, new Variables (models, optimizers, metrics) are replicated on the
        strategy's devices, and `fit()`/`evaluate()`/`predict()` run data-parallel."""
        self._enter_scope()
        try:
            yield self
        finally:
            self._exit_scope()

    # ---- running
    def run(self, fn, args=(), kwargs=None, options=None):
        """`fn(*args, **kwargs)` over the global batch, on all the devices (one
        program, the batch split over them). Returns `fn`'s results."""
        with self._distribution.scope():
            _context.in_run.append(self)
            try:
                return as_tensors(fn(*args, **(kwargs or {})))
            finally:
                _context.in_run.pop()

    def reduce(self, reduce_op, value, axis=None):
        """`value` (a result of `run`) combined over the replicas: with `axis=None`
        the value itself (it is already global; see the module docstring); with an
        `axis`, its sum or mean along that axis."""
        op = _reduce_op(reduce_op)

        def combine(x):
            if axis is None:
                return x
            x = x.value if isinstance(x, (Tensor, Variable)) else x
            return (jnp.sum if op is ReduceOp.SUM else jnp.mean)(jnp.asarray(x), axis=axis)

        return as_tensors(jax.tree_util.tree_map(combine, value))

    def gather(self, value, axis):
        """The replicas' values concatenated along `axis`: the global value itself."""
        return as_tensors(value)

    def experimental_local_results(self, value):
        """A tuple with one entry per replica: batch-shaped values (first axis
        divisible by the number of replicas) split into the replicas' rows; other
        values whole, once."""
        count = self.num_replicas_in_sync

        def split(x):
            shape = np.shape(x)
            if count > 1 and shape and shape[0] % count == 0:
                x = x.value if isinstance(x, (Tensor, Variable)) else x
                return tuple(as_tensors(p) for p in jnp.split(jnp.asarray(x), count))
            return (x,)

        leaves, tree = jax.tree_util.tree_flatten(value)
        if not leaves:
            return (value,)
        parts = [split(leaf) for leaf in leaves]
        n = min(len(p) for p in parts)
        return tuple(jax.tree_util.tree_unflatten(tree, [p[i] if len(p) > 1 else p[0]
                                                         for p in parts]) for i in range(n))

    def experimental_distribute_values_from_function(self, value_fn):
        """`value_fn(ValueContext)` for replica 0 (the global view's one call)."""
        return value_fn(ValueContext(0, self.num_replicas_in_sync))

    # ---- input
    def experimental_distribute_dataset(self, dataset, options=None):
        """Iterates `dataset` (batched with the global batch size) giving each batch
        on the devices, split along its first axis. In a multi-process job each
        process feeds its share of the rows."""
        return DistributedDataset(self, dataset, per_replica=False)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """`dataset_fn(InputContext)` gives a dataset batched per replica; each step
        takes one batch per replica (of this process), concatenated."""
        context = InputContext(multi_host.num_processes(), multi_host.process_id(),
                               self.num_replicas_in_sync)
        return DistributedDataset(self, dataset_fn(context), per_replica=True)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def _wait_for_steps(self):
        """On simulated CPU devices, wait for the last step to finish before the
        next batch goes in (see placement.calls_must_wait: queued collective
        programs can starve each other of the host's threads)."""
        if len(self._devices) > 1 and all(d.platform == "cpu" for d in self._devices):
            jax.block_until_ready([v._value for v in list(self._variables)])

    def __repr__(self):
        return f"<tf.distribute.{type(self).__name__} on {list(self.worker_devices)}>"


class ValueContext:
    """What `experimental_distribute_values_from_function`'s function is told."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync


class MirroredStrategy(Strategy):
    """Synchronous data parallelism over this machine's devices.

    Args:
        devices: device names ('/gpu:0', 'cpu:1', ...) or jax Devices; default all
            local devices.
        cross_device_ops: accepted; XLA chooses the all-reduce.
    """

    def __init__(self, devices=None, cross_device_ops=None):
        super().__init__(None if devices is None else [_jax_device(d) for d in devices])


class OneDeviceStrategy(Strategy):
    """Everything on one device (`device`, e.g. '/gpu:0' or '/cpu:0')."""

    def __init__(self, device):
        super().__init__([_jax_device(device)])


def _tf_config_job():
    """(coordinator 'host:port', number of workers, this worker's index) from the
    TF_CONFIG environment variable, or None."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return None
    try:
        config = json.loads(raw)
        cluster, task = config.get("cluster", {}), config.get("task", {})
        workers = list(cluster.get("chief", [])) + list(cluster.get("worker", []))
        index = int(task.get("index", 0)) + (len(cluster.get("chief", []))
                                            if task.get("type") == "worker" else 0)
    except (ValueError, AttributeError, TypeError) as e:
        raise ValueError(f"MultiWorkerMirroredStrategy: TF_CONFIG is not valid JSON of the "
                         f"form {{'cluster': {{'worker': [...]}}, 'task': {{'type': 'worker', "
                         f"'index': i}}}}: {e}") from None
    return (workers[0], len(workers), index) if len(workers) > 1 else None


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous data parallelism over the devices of several processes (hosts),
    joined with `jax.distributed` (`loopax.distribution.initialize`).

    The job comes from TF_CONFIG (`{"cluster": {"worker": ["host:port", ...]},
    "task": {"type": "worker", "index": i}}`; the first worker coordinates) or
    from an earlier `loopax.distribution.initialize(...)`. Without either it is
    one process: `MirroredStrategy` over the local devices.

    Args:
        cluster_resolver: accepted; the job comes from TF_CONFIG.
        communication_options: accepted; XLA chooses the collectives.
    """

    def __init__(self, cluster_resolver=None, communication_options=None):
        job = _tf_config_job()
        if job is not None and not jax.distributed.is_initialized():
            coordinator, count, index = job
            try:
                multi_host.initialize(coordinator, count, index)
            except RuntimeError as e:
                raise RuntimeError(
                    "MultiWorkerMirroredStrategy: TF_CONFIG describes a job of "
                    f"{count} workers, but JAX has already started on this process, so "
                    "it can no longer join it. Create the strategy first, before any "
                    f"computation (right after `import loopax.tf as tf`). ({e})") from None
        super().__init__(jax.devices())


class _DefaultStrategy(Strategy):
    """The strategy outside every scope: one replica, the default device."""

    def __init__(self):
        self._devices = [None]
        self._distribution = None
        self._variables = weakref.WeakSet()

    @property
    def worker_devices(self):
        return (f"{jax.devices()[0].platform}:{jax.devices()[0].id}",)

    @contextlib.contextmanager
    def scope(self):
        yield self

    def run(self, fn, args=(), kwargs=None, options=None):
        return as_tensors(fn(*args, **(kwargs or {})))

    def _wait_for_steps(self):
        pass

    def __repr__(self):
        return "<tf.distribute default strategy (one replica)>"


_DEFAULT = _DefaultStrategy()


# ---- distributed datasets --------------------------------------------------------------

class DistributedDataset:
    """A dataset whose batches go onto a strategy's devices, split along the first axis."""

    def __init__(self, strategy, dataset, per_replica):
        self._strategy = strategy
        self._dataset = dataset
        self._per_replica = per_replica

    def __iter__(self):
        return DistributedIterator(self._strategy, iter(self._dataset), self._per_replica)

    @property
    def element_spec(self):
        return getattr(self._dataset, "element_spec", None)

    def __repr__(self):
        return f"<DistributedDataset of {self._dataset!r} on {self._strategy!r}>"


# A DistributedDataset passed to a tf.function is a pytree of its batches: the
# function's `for x in dataset` runs over them as traced inputs (an unrolled loop,
# one compile per number and shape of batches), and each call iterates the dataset
# again, as TensorFlow does (a reshuffled order each epoch), instead of baking the
# first call's batches into the program.
_UNROLL_WARNING = 64


def _flatten_dataset(dataset):
    cardinality = getattr(dataset._dataset, "cardinality", None)
    count = int(np.asarray(cardinality())) if callable(cardinality) else None
    if count is not None and count < 0:
        raise ValueError(
            "A distributed dataset of infinite or unknown length was passed to a "
            "tf.function: loopax unrolls `for x in dataset` inside a compiled function, "
            "so the dataset must be finite. Use dataset.take(steps), or iterate outside "
            "the function and call a tf.function step per batch.")
    batches = tuple(dataset)
    if len(batches) > _UNROLL_WARNING:
        warnings.warn(
            f"A tf.function loops over a distributed dataset of {len(batches)} batches: "
            "loopax unrolls the loop (one program holding every step), which compiles "
            "slowly; iterate outside the function and call a tf.function step per batch.",
            stacklevel=4)
    return batches, dataset._strategy


def _unflatten_dataset(strategy, batches):
    return _Batches(strategy, batches)


class _Batches:
    """A distributed dataset inside a tf.function: its batches (traced)."""

    def __init__(self, strategy, batches):
        self._strategy = strategy
        self._batches = batches

    def __iter__(self):
        return iter(self._batches)


jax.tree_util.register_pytree_node(DistributedDataset, _flatten_dataset, _unflatten_dataset)


def _host(leaf):
    if isinstance(leaf, (Tensor, Variable)):
        leaf = leaf.value
    return leaf if isinstance(leaf, jax.Array) else np.asarray(leaf)


def _own_rows(batch):
    """This process's block of rows of a global batch (all of it with one process)."""
    count, index = multi_host.num_processes(), multi_host.process_id()
    if count == 1:
        return batch

    def block(leaf):
        rows = np.shape(leaf)[0] if np.ndim(leaf) else 0
        if rows % count:
            raise ValueError(
                f"experimental_distribute_dataset: a batch of {rows} rows does not split "
                f"over {count} processes; batch with a multiple of {count} and "
                f"drop_remainder=True.")
        share = rows // count
        return np.asarray(leaf)[index * share:(index + 1) * share]

    return jax.tree_util.tree_map(block, batch)


class DistributedIterator:
    """The iterator of a `DistributedDataset` (`next(iterator)`, `get_next()`)."""

    def __init__(self, strategy, iterator, per_replica):
        self._strategy = strategy
        self._iterator = iterator
        self._per_replica = per_replica

    def __iter__(self):
        return self

    def _next_batch(self):
        if not self._per_replica:
            return _own_rows(jax.tree_util.tree_map(_host, next(self._iterator)))
        local = self._strategy.num_replicas_in_sync // multi_host.num_processes()
        parts = []
        for _ in range(max(local, 1)):
            try:
                parts.append(jax.tree_util.tree_map(_host, next(self._iterator)))
            except StopIteration:
                break
        if not parts:
            raise StopIteration
        return jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]),
                                      *parts)

    def __next__(self):
        batch = self._next_batch()
        self._strategy._wait_for_steps()
        dist = self._strategy.distribution
        if dist is None:
            return as_tensors(batch)
        with dist.scope():
            return as_tensors(placement.put_batch(batch))

    def get_next(self):
        return next(self)

    def get_next_as_optional(self):
        raise NotImplementedError("DistributedIterator.get_next_as_optional is not provided; "
                                  "iterate with `for batch in dataset` or catch StopIteration.")


class experimental:  # TensorFlow's namespace
    """`tf.distribute.experimental`."""
    MultiWorkerMirroredStrategy = MultiWorkerMirroredStrategy

    class CommunicationOptions:
        """Accepted; XLA chooses the collectives."""

        def __init__(self, *args, **kwargs):
            pass

    class CommunicationImplementation(enum.Enum):
        AUTO = "AUTO"
        RING = "RING"
        NCCL = "NCCL"

    CollectiveCommunication = CommunicationImplementation



def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"loopax.tf.distribute.{name} is not provided. loopax.tf.distribute has "
        "MirroredStrategy, OneDeviceStrategy, MultiWorkerMirroredStrategy, get_strategy, "
        "has_strategy, ReduceOp, InputContext and InputOptions, all on "
        "loopax.distribution (DataParallel); TPUStrategy and ParameterServerStrategy "
        "have no loopax form: use loopax.distribution.DataParallel or ModelParallel.")
