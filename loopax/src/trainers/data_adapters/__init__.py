"""Data adapters: every kind of data `fit`, `evaluate` and `predict` accept,
behind one interface (`DataAdapter`). `get_data_adapter` picks the right one."""

from __future__ import annotations

import types
from typing import Any

from loopax.src.data.dataset import Dataset
from loopax.src.trainers.data_adapters import data_adapter_utils
from loopax.src.trainers.data_adapters.array_data_adapter import ArrayDataAdapter, check_batch_size
from loopax.src.trainers.data_adapters.data_adapter import DataAdapter
from loopax.src.trainers.data_adapters.data_adapter_utils import (
    pack_x_y_sample_weight,
    unpack_x_y_sample_weight,
)
from loopax.src.trainers.data_adapters.framework_adapters import (
    GrainDatasetAdapter,
    TFDatasetAdapter,
    TorchDataLoaderAdapter,
    is_grain_dataset,
    is_tf_dataset,
    is_torch_dataloader,
)
from loopax.src.trainers.data_adapters.generator_data_adapter import GeneratorDataAdapter
from loopax.src.trainers.data_adapters.py_dataset import PyDataset, PyDatasetAdapter


def is_batch_source(x: Any) -> bool:
    """Whether `x` yields its own batches (no `y`, `batch_size` or `sample_weight`)."""
    if isinstance(x, (PyDataset, types.GeneratorType)) or is_tf_dataset(x) \
            or is_torch_dataloader(x) or is_grain_dataset(x):
        return True
    if isinstance(x, (list, tuple, dict, str, bytes)) or hasattr(x, "__array__") \
            or data_adapter_utils.is_pandas(x):
        return False
    return hasattr(x, "__iter__")   # an iterator, or an object iterated afresh each epoch


def get_data_adapter(x: Any, y: Any = None, sample_weight: Any = None,
                     batch_size: int | None = None, steps_per_epoch: int | None = None,
                     shuffle: bool | str = False, class_weight: dict | None = None,
                     what: str = "fit") -> DataAdapter:
    """The adapter for `x` (and `y`, `sample_weight`)."""
    if x is None:
        raise ValueError(f"{what}() needs data: pass `x` (arrays, a generator, a "
                         "PyDataset, ...).")
    if is_batch_source(x):
        for name, value in (("y", y), ("sample_weight", sample_weight)):
            if value is not None:
                raise ValueError(
                    f"{what}(): `{name}` must not be given when `x` is a "
                    f"{type(x).__name__}: it yields (x, y[, sample_weight]) batches itself.")
        if isinstance(x, Dataset):
            # A loopax.tf.data.Dataset: its NumPy elements (no Tensor per batch), or the
            # PyDataset the data utilities' datasets are built on.
            x = x._fit_source()
            if not isinstance(x, PyDataset):
                return GeneratorDataAdapter(x, steps=steps_per_epoch, class_weight=class_weight)
        if isinstance(x, PyDataset):
            # The data utilities' datasets stand for Keras's tf.data.Dataset, whose order
            # is its own (its `shuffle` argument): fit's `shuffle` leaves it alone there.
            shuffle = shuffle and not getattr(x, "_orders_itself", False)
            return PyDatasetAdapter(x, shuffle=shuffle, steps=steps_per_epoch,
                                    class_weight=class_weight)
        if is_tf_dataset(x):
            return TFDatasetAdapter(x, steps=steps_per_epoch, class_weight=class_weight)
        if is_torch_dataloader(x):
            return TorchDataLoaderAdapter(x, steps=steps_per_epoch, class_weight=class_weight)
        if is_grain_dataset(x):
            return GrainDatasetAdapter(x, steps=steps_per_epoch, class_weight=class_weight)
        return GeneratorDataAdapter(x, steps=steps_per_epoch, class_weight=class_weight)
    if batch_size is not None:
        check_batch_size(batch_size)
    # For arrays `steps_per_epoch` only limits the batches per epoch (the
    # caller does that); the batch size stays `batch_size` (default 32).
    return ArrayDataAdapter(x, y, sample_weight, batch_size=batch_size, shuffle=shuffle,
                            class_weight=class_weight)


__all__ = ["ArrayDataAdapter", "DataAdapter", "GeneratorDataAdapter", "PyDataset",
           "PyDatasetAdapter", "TFDatasetAdapter", "TorchDataLoaderAdapter",
           "GrainDatasetAdapter", "get_data_adapter", "is_batch_source",
           "pack_x_y_sample_weight", "unpack_x_y_sample_weight", "data_adapter_utils"]
