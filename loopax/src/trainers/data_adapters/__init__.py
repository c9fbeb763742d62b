"""Data adapters: every kind of data `fit`, `evaluate` and `predict` accept,
behind one interface (`DataAdapter`). `get_data_adapter` picks the right one."""

from __future__ import annotations

import types
from typing import Any

from loopax.src.data.dataset import Dataset
from loopax.src.trainers.data_adapters import data_adapter_utils
from loopax.src.trainers.data_adapters.array_data_adapter import ArrayDataAdapter
from loopax.src.trainers.data_adapters.data_adapter import DataAdapter
from loopax.src.trainers.data_adapters.data_adapter_utils import (
    pack_x_y_sample_weight,
    unpack_x_y_sample_weight,
)
from loopax.src.trainers.data_adapters.framework_adapters import (
    framework_adapter,
    is_grain_dataset,
    is_tf_dataset,
    is_torch_dataloader,
)
from loopax.src.trainers.data_adapters.generator_data_adapter import GeneratorDataAdapter
from loopax.src.trainers.data_adapters.py_dataset import PyDataset, PyDatasetAdapter


def batch_source_kind(cls: type) -> str | None:
    """What kind of batch source instances of `cls` are ("pydataset", "tf", "torch",
    "grain", "generator"), or None for array data (arrays, pandas objects, lists, tuples
    and dicts of them). Only the type is read: the data is not touched."""
    if issubclass(cls, (PyDataset, Dataset)):
        return "pydataset"
    if is_tf_dataset(cls):
        return "tf"
    if is_torch_dataloader(cls):
        return "torch"
    if is_grain_dataset(cls):
        return "grain"
    if issubclass(cls, types.GeneratorType):
        return "generator"
    if issubclass(cls, (list, tuple, dict, str, bytes)) or hasattr(cls, "__array__") \
            or data_adapter_utils.is_pandas(cls):
        return None
    # an iterator, or an object iterated afresh each epoch
    return "generator" if hasattr(cls, "__iter__") else None


def get_data_adapter(x: Any, y: Any = None, sample_weight: Any = None,
                     batch_size: int | None = None, steps_per_epoch: int | None = None,
                     shuffle: bool | str = False, class_weight: dict | None = None,
                     what: str = "fit") -> DataAdapter:
    """The adapter for `x` (and `y`, `sample_weight`)."""
    if x is None:
        raise ValueError(f"{what}() needs data: pass `x` (arrays, a generator, a "
                         "PyDataset, ...).")
    kind = batch_source_kind(type(x))
    if kind is None:
        # For arrays `steps_per_epoch` only limits the batches per epoch (the caller
        # does that); the batch size stays `batch_size` (default 32).
        return ArrayDataAdapter(x, y, sample_weight, batch_size=batch_size, shuffle=shuffle,
                                class_weight=class_weight)
    for name, value in (("y", y), ("sample_weight", sample_weight)):
        if value is not None:
            raise ValueError(
                f"{what}(): `{name}` must not be given when `x` is a "
                f"{type(x).__name__}: it yields (x, y[, sample_weight]) batches itself.")
    if isinstance(x, Dataset):
        # A loopax.tf.data.Dataset: its NumPy elements (no Tensor per batch), or the
        # PyDataset the data utilities' datasets are built on.
        x = x._fit_source()
        kind = "pydataset" if isinstance(x, PyDataset) else "generator"
    if kind == "pydataset":
        # The data utilities' datasets stand for Keras's tf.data.Dataset, whose order
        # is its own (its `shuffle` argument): fit's `shuffle` leaves it alone there.
        shuffle = shuffle and not getattr(x, "_orders_itself", False)
        return PyDatasetAdapter(x, shuffle=shuffle, steps=steps_per_epoch,
                                class_weight=class_weight)
    if kind in ("tf", "torch", "grain"):
        return framework_adapter(kind, x, steps_per_epoch, class_weight)
    return GeneratorDataAdapter(x, steps=steps_per_epoch, class_weight=class_weight)


__all__ = ["ArrayDataAdapter", "DataAdapter", "GeneratorDataAdapter", "PyDataset",
           "PyDatasetAdapter", "get_data_adapter", "batch_source_kind",
           "pack_x_y_sample_weight", "unpack_x_y_sample_weight", "data_adapter_utils"]
