"""The files tf.data's readers take (`TextLineDataset`, `CsvDataset`): paths from the
forms TensorFlow accepts, and their contents, decompressed."""

from __future__ import annotations

import bz2
import gzip
import os
import zlib
from typing import Any

from loopax.src.data.dataset import Dataset
from loopax.src.data.strings import StringTensor

_OPENERS = {None: open, "": open, "GZIP": gzip.open, "ZLIB": None, "BZ2": bz2.open}


def file_paths(filenames: Any) -> list:
    """The paths a reader takes: a path, a list of them, a string Tensor or a Dataset
    of paths."""
    if isinstance(filenames, Dataset):
        return [n for n in filenames.as_numpy_iterator()]
    if isinstance(filenames, (str, bytes, os.PathLike)):
        return [filenames]
    if isinstance(filenames, StringTensor):
        return list(filenames.numpy().reshape(-1)) if filenames.ndim else [filenames.numpy()]
    return list(filenames)


def read_bytes(path: str | bytes | os.PathLike, compression_type: str | None) -> bytes:
    """The (decompressed) contents of the file at `path`."""
    path = os.fsdecode(path) if isinstance(path, bytes) else os.fspath(path)
    kind = compression_type.upper() if compression_type else None
    if kind not in _OPENERS:
        raise ValueError(f"compression_type must be None, '', 'GZIP' or "
                         f"'ZLIB'; got {compression_type!r}.")
    if kind == "ZLIB":
        with open(path, "rb") as f:
            return zlib.decompress(f.read())
    with _OPENERS[kind](path, "rb") as f:
        return f.read()
