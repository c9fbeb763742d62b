"""`PyDataset`: a sequence of batches you index (`dataset[i]`), like Keras's.

Subclass it, implement `__len__` (batches per epoch) and `__getitem__(i)`
returning a batch `x`, `(x, y)` or `(x, y, sample_weight)`, and pass the
object to `fit`, `evaluate` or `predict`. With `workers > 1` batches are
loaded by a pool of threads, up to `max_queue_size` ahead.
"""

from __future__ import annotations

import collections
import concurrent.futures
from typing import Iterator

import numpy as np

from loopax.src.api_export import export
from loopax.src.trainers.data_adapters.generator_data_adapter import GeneratorDataAdapter


@export("loopax.utils.PyDataset", "loopax.utils.Sequence")
class PyDataset:
    """Base class for indexable datasets of batches.

    Args:
        workers: threads loading batches in parallel (1: in the caller's thread).
        use_multiprocessing: accepted for Keras compatibility; loopax uses
            threads (loading NumPy batches releases the GIL).
        max_queue_size: batches prepared ahead when `workers > 1`.
    """

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self._workers = workers
        self._use_multiprocessing = use_multiprocessing
        self._max_queue_size = max_queue_size

    @property
    def workers(self) -> int:
        return getattr(self, "_workers", 1)

    @property
    def use_multiprocessing(self) -> bool:
        return getattr(self, "_use_multiprocessing", False)

    @property
    def max_queue_size(self) -> int:
        return getattr(self, "_max_queue_size", 10)

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__(index).")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__().")

    @property
    def num_batches(self) -> int | None:
        """Batches per epoch: `len(self)`, or None if `__len__` is not defined."""
        try:
            return len(self)
        except NotImplementedError:
            return None

    def on_epoch_begin(self) -> None:
        """Called at the start of every epoch."""

    def on_epoch_end(self) -> None:
        """Called at the end of every epoch (e.g. to reshuffle)."""


class PyDatasetAdapter(GeneratorDataAdapter):
    """Reads a `PyDataset` in index order, or shuffled per epoch if asked: the
    order is drawn from the epoch's seed (`fit`'s seed and the epoch number),
    so a resumed `fit` reads the same order and can start at any batch."""

    resumable = True

    def __init__(self, dataset: PyDataset, shuffle: bool | str = False, steps: int | None = None,
                 class_weight: dict | None = None) -> None:
        self._dataset = dataset
        self._shuffle = shuffle
        self._epoch = 0
        n = dataset.num_batches
        if n == 0:
            raise ValueError(f"{type(dataset).__name__} has length 0: the dataset is empty.")
        super().__init__(dataset, steps=steps if steps is not None else n,
                         class_weight=class_weight)
        self.batches_per_pass = n

    def _fresh_iterator(self):
        return self._batches()

    def _indices(self, seed=None, start=0):
        n = self._dataset.num_batches
        if n is None:
            i = start
            while True:
                yield i
                i += 1
        order = np.arange(n)
        if self._shuffle:
            np.random.default_rng(self._epoch if seed is None else seed).shuffle(order)
        yield from order[start:].tolist()

    def get_numpy_iterator(self, seed: int | tuple[int, ...] | None = None,
                           start: int = 0) -> Iterator:
        """The epoch's batches, in the order `seed` draws, from batch `start` on
        (the skipped batches are not loaded)."""
        # Up to the dataset's end: the caller stops at its steps (fit's next epoch
        # may go on from where this one stopped).
        n = self._dataset.num_batches
        return self._standardized(self._batches(seed, start), None if n is None else n - start)

    def _batches(self, seed=None, start=0):
        dataset = self._dataset
        if dataset.workers <= 1:
            for i in self._indices(seed, start):
                try:
                    yield dataset[i]
                except (IndexError, StopIteration):
                    return
            return
        with concurrent.futures.ThreadPoolExecutor(dataset.workers) as pool:
            pending = collections.deque()
            indices = self._indices(seed, start)
            for i in indices:
                pending.append(pool.submit(dataset.__getitem__, i))
                if len(pending) >= max(dataset.max_queue_size, 1):
                    break
            while pending:
                try:
                    batch = pending.popleft().result()
                except (IndexError, StopIteration):
                    return
                nxt = next(indices, None)
                if nxt is not None:
                    pending.append(pool.submit(dataset.__getitem__, nxt))
                yield batch

    def on_epoch_begin(self) -> None:
        self._dataset.on_epoch_begin()

    def on_epoch_end(self) -> None:
        self._epoch += 1
        self._dataset.on_epoch_end()
