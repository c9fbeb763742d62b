"""Data from other frameworks: `tf.data.Dataset`, `torch.utils.data.DataLoader`
and grain datasets/loaders. Each is read batch by batch as NumPy (through
`GeneratorDataAdapter`); none of those libraries is imported unless the
caller already has."""

from __future__ import annotations

import sys
from typing import Any

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


def framework_adapter(kind: str, data: Any, steps: int | None = None,
                      class_weight: dict | None = None) -> GeneratorDataAdapter:
    """A `GeneratorDataAdapter` over a tf.data.Dataset ("tf"), a torch DataLoader
    ("torch") or a grain dataset or loader ("grain"), each iterated afresh per
    epoch; `steps` defaults to its length when it has one."""
    if kind == "tf":   # its NumPy batches; cardinality < 0: infinite or unknown
        n: int | None = int(data.cardinality())
        n, source = (n if n and n > 0 else None), _Iterable(data.as_numpy_iterator)
    else:
        n, source = _length(data), _Iterable(lambda: iter(data))
    return GeneratorDataAdapter(source, n if steps is None else steps, class_weight,
                                _torch_to_numpy if kind == "torch" else None)


def _length(data):
    try:
        return len(data)
    except TypeError:
        return None


def _torch_to_numpy(batch):
    if isinstance(batch, dict):
        return {k: _torch_to_numpy(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return tuple(_torch_to_numpy(v) for v in batch)
    return batch.detach().cpu().numpy() if hasattr(batch, "detach") else np.asarray(batch)


class _Iterable:
    """Iterates `make_iterator()` each epoch."""

    def __init__(self, make_iterator):
        self.make_iterator = make_iterator

    def __iter__(self):
        return iter(self.make_iterator())


__all__ = ["is_tf_dataset", "is_torch_dataloader", "is_grain_dataset", "framework_adapter"]
