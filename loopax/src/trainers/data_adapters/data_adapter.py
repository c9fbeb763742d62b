"""`DataAdapter`: what `fit`, `evaluate` and `predict` need from a data source."""

from __future__ import annotations


class DataAdapter:
    """One epoch of batches at a time, plus what is known about their count.

    Attributes:
        num_batches: batches per epoch, or None when unknown (a generator).
        batch_size: rows per full batch, or None when unknown.
        partial_batch_size: rows in the last, smaller batch (0 if none), or
            None when unknown.
    """

    num_batches: int | None = None
    batch_size: int | None = None
    partial_batch_size: int | None = None

    def get_numpy_iterator(self, epoch_seed: int = 0):
        """Yields the batches of one epoch: `x`, `(x, y)` or `(x, y, sample_weight)`."""
        raise NotImplementedError

    def peek(self):
        """The first batch, without consuming it (used to build the model)."""
        raise NotImplementedError

    def on_epoch_begin(self):
        pass

    def on_epoch_end(self):
        pass

    def close(self):
        pass
