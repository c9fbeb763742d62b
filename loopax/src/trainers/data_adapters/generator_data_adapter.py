"""`GeneratorDataAdapter`: Python generators, iterators and re-iterable objects
yielding batches `x`, `(x, y)` or `(x, y, sample_weight)`.

An iterator (a generator object) is consumed across epochs: with
`steps_per_epoch` each epoch takes that many batches and the next epoch
continues where it stopped; without it an epoch ends when the iterator does
(only one such epoch can run). A re-iterable object (with `__iter__` but no
`__next__`) is iterated afresh each epoch.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from loopax.src.trainers.data_adapters import data_adapter_utils as utils
from loopax.src.trainers.data_adapters.data_adapter import DataAdapter


class GeneratorDataAdapter(DataAdapter):
    def __init__(self, source, steps=None, class_weight=None, convert=None):
        self._reiterable = not hasattr(source, "__next__")
        self._source = source
        self._iterator = None if self._reiterable else iter(source)
        self._class_weight = class_weight
        self._convert = convert or (lambda batch: batch)
        self._peeked = None
        self.exhausted = False
        self.num_batches = steps if steps is not None else _length(source)
        first = self.peek()
        self.batch_size = utils.batch_size_of(first, default=None)
        self.partial_batch_size = None

    def _fresh_iterator(self):
        return iter(self._source) if self._reiterable else self._iterator

    def peek(self) -> Any:
        if self._peeked is None:
            iterator = self._fresh_iterator()
            try:
                first = next(iterator)
            except StopIteration:
                raise ValueError(
                    f"The {type(self._source).__name__} given as data yielded no batch: the "
                    "dataset is empty (or an exhausted generator was reused). Pass a "
                    "generator that yields (x, y) batches.") from None
            self._peeked = self._standardize(first)
            if not self._reiterable:
                self._iterator = itertools.chain([first], iterator)
        return self._peeked

    def _standardize(self, batch):
        x, y, sample_weight = utils.unpack_x_y_sample_weight(self._convert(batch))
        parts, _ = utils.standardize(x, y, sample_weight, self._class_weight)
        return utils.pack_x_y_sample_weight(*parts)

    def get_numpy_iterator(self, seed: int | tuple[int, ...] | None = None,
                           start: int = 0) -> Iterator:
        """The epoch's batches (`seed` is unused: a generator has its own order);
        with `start`, the first `start` are drawn and dropped (a generator cannot
        skip: exact only if it yields the same batches again)."""
        iterator = self._fresh_iterator()
        for _ in range(start):
            if next(iterator, None) is None:
                return iter(())
        limit = None if self.num_batches is None else self.num_batches - start
        return self._standardized(iterator, limit)

    def _standardized(self, iterator, limit):
        count = 0
        while limit is None or count < limit:
            try:
                batch = next(iterator)
            except StopIteration:
                if not self._reiterable:
                    self.exhausted = True
                return
            count += 1
            yield self._standardize(batch)


def _length(source):
    try:
        n = len(source)
    except (TypeError, NotImplementedError):   # no length, or a PyDataset without one
        return None
    return n if n > 0 else None
