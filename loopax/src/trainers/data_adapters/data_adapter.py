"""`DataAdapter`: what `fit`, `evaluate` and `predict` need from a data source."""

from __future__ import annotations

from typing import Any, Callable, Iterator


class DataAdapter:
    """One epoch of batches at a time, plus what is known about their count.

    Every adapter serves host batches (`get_numpy_iterator`) from any batch on
    (`start`: a resumed epoch). One whose data fits on the device
    (`fits_on_device()`) also serves it whole (`device_data`, `device_order`):
    the compiled loops then gather their batches on the device.

    Attributes:
        num_batches: batches per epoch, or None when unknown (a generator).
        num_full_batches: batches of `batch_size` rows (all but a partial last
            one), or None when unknown.
        batch_size: rows per full batch, or None when unknown.
        partial_batch_size: rows in the last, smaller batch (0 if none), or
            None when unknown.
        in_memory: the whole dataset is held as arrays (`data`), so its batch
            count follows from its size and its values can be checked up front.
        resumable: `get_numpy_iterator(seed, start=k)` yields exactly the
            batches from `k` on that the whole epoch would (arrays, PyDatasets);
            a generator can only skip what it yields now.
        batches_per_pass: batches of one pass over the data whatever `steps` asks
            (arrays, a PyDataset with a length), or None: `fit`'s epochs then go on
            through it when `steps_per_epoch` is smaller (`epoch_runner.DataPosition`).
        check_batch: called as `check_batch(batch, index)` on each batch
            `host_batches` yields, or None; `fit`'s data checks set it for data
            they cannot read ahead (trainers/data_checks.py).
    """

    num_batches: int | None = None
    num_full_batches: int | None = None
    batch_size: int | None = None
    partial_batch_size: int | None = None
    in_memory: bool = False
    resumable: bool = False
    batches_per_pass: int | None = None
    check_batch: Callable[[Any, int], None] | None = None

    def get_numpy_iterator(self, seed: int | tuple[int, ...] | None = None,
                           start: int = 0) -> Iterator:
        """Yields the batches of one epoch, `x`, `(x, y)` or `(x, y, sample_weight)`,
        from batch `start` on; `seed` draws the epoch's order where the data is
        shuffled."""
        raise NotImplementedError

    def host_batches(self, seed: int | tuple[int, ...] | None = None,
                     start: int = 0) -> Iterator:
        """`get_numpy_iterator`'s batches, each given to `check_batch` first."""
        batches = self.get_numpy_iterator(seed, start=start)
        check = self.check_batch
        if check is None:
            return batches

        def checked() -> Iterator:
            for index, batch in enumerate(batches, start):
                check(batch, index)
                yield batch
        return checked()

    def peek(self) -> Any:
        """The first batch, without consuming it (used to build the model)."""
        raise NotImplementedError

    # ---- device residency --------------------------------------------------------
    def fits_on_device(self) -> bool:
        """Whether the whole dataset goes to the device once (`device_data`)."""
        return False

    def device_data(self) -> Any:
        """The whole dataset on the device (only when `fits_on_device()`)."""
        raise NotImplementedError(f"{type(self).__name__} does not keep its data on the device.")

    def device_order(self, seed: int | tuple[int, ...] | None) -> Any:
        """The epoch's row order on the device, or None for the natural order
        (only when `fits_on_device()`)."""
        raise NotImplementedError(f"{type(self).__name__} does not keep its data on the device.")

    def on_epoch_begin(self) -> None:
        pass

    def on_epoch_end(self) -> None:
        pass

    def close(self) -> None:
        pass
