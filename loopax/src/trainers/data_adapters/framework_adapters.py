"""Data from other frameworks: `tf.data.Dataset`, `torch.utils.data.DataLoader`
and grain datasets/loaders. Each is read batch by batch as NumPy (through
`GeneratorDataAdapter`); none of those libraries is imported unless the
caller already has."""

from __future__ import annotations

import sys

import numpy as np

from loopax.src.trainers.data_adapters.generator_data_adapter import GeneratorDataAdapter


def is_tf_dataset(cls: type) -> bool:
    tf = sys.modules.get("tensorflow")
    return tf is not None and issubclass(cls, tf.data.Dataset)


def is_torch_dataloader(cls: type) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and issubclass(cls, torch.utils.data.DataLoader)


def is_grain_dataset(cls: type) -> bool:
    """(Of a type, like the two above.)"""
    if "grain" not in sys.modules and "grain.python" not in sys.modules:
        return False
    return cls.__module__.startswith("grain")


class TFDatasetAdapter(GeneratorDataAdapter):
    def __init__(self, dataset, steps=None, class_weight=None):
        self._dataset = dataset
        n = int(dataset.cardinality())
        super().__init__(_Iterable(dataset.as_numpy_iterator), steps=steps if steps is not None
                         else (n if n > 0 else None), class_weight=class_weight)


class TorchDataLoaderAdapter(GeneratorDataAdapter):
    def __init__(self, loader, steps=None, class_weight=None):
        try:
            n = len(loader)
        except TypeError:
            n = None
        super().__init__(_Iterable(lambda: iter(loader)), steps=steps if steps is not None else n,
                         class_weight=class_weight, convert=_torch_to_numpy)


class GrainDatasetAdapter(GeneratorDataAdapter):
    def __init__(self, dataset, steps=None, class_weight=None):
        try:
            n = len(dataset)
        except TypeError:
            n = None
        super().__init__(_Iterable(lambda: iter(dataset)), steps=steps if steps is not None else n,
                         class_weight=class_weight)


def _torch_to_numpy(batch):
    def leaf(t):
        if hasattr(t, "detach"):
            return t.detach().cpu().numpy()
        return np.asarray(t)
    if isinstance(batch, dict):
        return {k: _torch_to_numpy(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return tuple(_torch_to_numpy(v) for v in batch)
    return leaf(batch)


class _Iterable:
    def __init__(self, make_iterator):
        self._make_iterator = make_iterator

    def __iter__(self):
        return iter(self._make_iterator())


__all__ = ["is_tf_dataset", "is_torch_dataloader", "is_grain_dataset", "TFDatasetAdapter",
           "TorchDataLoaderAdapter", "GrainDatasetAdapter"]
