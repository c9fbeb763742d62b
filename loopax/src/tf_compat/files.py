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
from loopax.src.utils import safe_open

# How a compressed file is opened (None: read as it is; ZLIB: inflated in memory).
_OPENERS: dict = {None: None, "": None, "ZLIB": zlib,
                  "GZIP": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
                  "BZ2": lambda raw: bz2.BZ2File(raw, mode="rb")}
# The most bytes a reader holds of one file, decompressed (its records are kept in memory).
MAX_FILE_BYTES = 2**31


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


def read_bytes(path: str | bytes | os.PathLike, compression_type: str | None,
               what: str = "a tf.data input file") -> bytes:
    """The (decompressed) contents of the regular file at `path`, at most
    `MAX_FILE_BYTES` after decompression (the readers hold a file in memory): a FIFO,
    a device or a file inflating past that is refused naming it."""
    path = os.fsdecode(path) if isinstance(path, bytes) else os.fspath(path)
    kind = compression_type.upper() if compression_type else None
    if kind not in _OPENERS:
        raise ValueError(f"compression_type must be None, '', 'GZIP', 'ZLIB' or 'BZ2'; "
                         f"got {compression_type!r}.")
    hint = "Split it into smaller files."
    if _OPENERS[kind] is None:
        return safe_open.read_bytes(path, MAX_FILE_BYTES, what, hint)
    with safe_open.open_regular(path, what) as raw:
        try:
            if kind == "ZLIB":
                data = safe_open.read_stream(raw, MAX_FILE_BYTES, path, what, hint)
                inflated = zlib.decompressobj().decompress(data, MAX_FILE_BYTES + 1)
                if len(inflated) > MAX_FILE_BYTES:
                    raise safe_open.over_budget(path, what, len(inflated), MAX_FILE_BYTES, hint)
                return inflated
            with _OPENERS[kind](raw) as f:
                return safe_open.read_stream(f, MAX_FILE_BYTES, path, what, hint)
        except (OSError, EOFError, zlib.error) as e:
            raise ValueError(f"{path} ({what}) is not a readable {kind} file: {e}. Check "
                             "the file and `compression_type`.") from None
