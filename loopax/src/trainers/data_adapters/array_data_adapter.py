"""`ArrayDataAdapter`: NumPy/JAX arrays, pandas objects, and lists, tuples and
dicts of them (several inputs or outputs).

In-memory data that fits is put on the device once (`device_data()`); each
epoch's shuffle is a permutation of row indices drawn from a seeded NumPy
generator (`epoch_order(seed)`, one small int32 transfer per epoch — drawing
it with jax.random would cost more to compile than to ship), and the compiled
training loop gathers its batches from it, so no batch crosses from the host
during `fit`. Data too
large for the device is sliced on the host instead (`get_numpy_iterator`).
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import jax
import numpy as np

from loopax.src.distribution import placement
from loopax.src.trainers.data_adapters import data_adapter_utils as utils
from loopax.src.trainers.data_adapters.data_adapter import DataAdapter

# In-memory data up to this size lives on the device during fit(); larger
# data is batched on the host and prefetched. On accelerators with memory
# statistics, a quarter of the free memory is used instead.
DEVICE_DATA_LIMIT_BYTES = 2 * 1024 ** 3


class ArrayDataAdapter(DataAdapter):
    """Batches in-memory arrays (their sizes are known: the counts are ints).

    Args:
        x, y, sample_weight: arrays or (nested) lists/tuples/dicts of arrays
            with a shared first dimension; pandas DataFrames/Series allowed.
        batch_size: rows per batch (default 32, or enough for `steps`).
        steps: batches per epoch, when `batch_size` is not given.
        shuffle: shuffle the rows each epoch.
        class_weight: `{class: weight}`, turned into per-sample weights.

    Attributes:
        parts: `(x, y, sample_weight)` as arrays (class weights folded in);
        data: the same packed as a batch is (`pack_x_y_sample_weight`).
    """

    num_batches: int
    num_full_batches: int
    batch_size: int
    partial_batch_size: int

    in_memory = True
    resumable = True

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, steps=None,
                 shuffle=False, class_weight=None):
        if batch_size is not None:
            batch_size = check_batch_size(batch_size)
        if class_weight is not None and y is None:
            raise ValueError("`class_weight` needs targets `y`.")
        self.parts, self.num_samples = utils.standardize(x, y, sample_weight, class_weight)
        self.data = utils.pack_x_y_sample_weight(*self.parts)
        if batch_size is None:
            batch_size = math.ceil(self.num_samples / steps) if steps else 32
        self.batch_size = min(batch_size, self.num_samples)
        self.num_batches = math.ceil(self.num_samples / self.batch_size)
        self.batches_per_pass = self.num_batches
        self.num_full_batches = self.num_samples // self.batch_size
        self.partial_batch_size = self.num_samples % self.batch_size
        self.shuffle = bool(shuffle)
        self._device_data = None

    # ---- on-device path -----------------------------------------------------
    def fits_on_device(self) -> bool:
        # In a multi-process job each process holds only its rows: batches go
        # through the host path, which assembles global arrays.
        nbytes = sum(int(a.nbytes) for a in jax.tree_util.tree_leaves(self.data))
        return nbytes <= _device_limit() and jax.process_count() == 1

    def device_data(self) -> Any:
        """The whole dataset on the default device (transferred once)."""
        if self._device_data is None:
            self._device_data = placement.put_replicated(self.data)
        return self._device_data

    def epoch_order(self, seed: int | tuple[int, ...] | None) -> np.ndarray | None:
        """This epoch's row order (int32), or None when not shuffling.

        `seed` is any NumPy seed, e.g. `(fit_seed, epoch)`."""
        if not self.shuffle or seed is None:
            return None
        return np.random.default_rng(seed).permutation(self.num_samples).astype(np.int32)

    def device_order(self, seed: int | tuple[int, ...] | None) -> jax.Array | None:
        order = self.epoch_order(seed)
        return None if order is None else placement.put_replicated(order)

    # ---- host path ----------------------------------------------------------
    def get_numpy_iterator(self, seed: int | tuple[int, ...] | None = None,
                           start: int = 0) -> Iterator:
        """The epoch's batches from batch `start` on (a resumed epoch skips the first)."""
        order = self.epoch_order(seed)
        for i in range(start, self.num_batches):
            lo, hi = i * self.batch_size, min((i + 1) * self.batch_size, self.num_samples)
            if order is None:
                yield utils.slice_arrays(self.data, lo, hi)
            else:
                rows = order[lo:hi]
                yield jax.tree_util.tree_map(lambda a: np.asarray(a)[rows], self.data)

    def peek(self) -> Any:
        return utils.slice_arrays(self.data, 0, self.batch_size)


def check_batch_size(batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size <= 0:
        raise ValueError(f"`batch_size` must be a positive integer, got {batch_size!r}.")
    return int(batch_size)


def _device_limit() -> int:
    device = jax.devices()[0]
    try:
        stats = device.memory_stats()
    except Exception:  # CPU and some backends have none
        stats = None
    if stats and "bytes_limit" in stats:
        free = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
        return max(free // 4, 0)
    return DEVICE_DATA_LIMIT_BYTES
