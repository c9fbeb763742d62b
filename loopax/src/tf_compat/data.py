"""`tf.data`: `Dataset` (loopax.src.data.dataset, the one dataset type the data
utilities return too), `TextLineDataset`, `experimental` and the constants."""

from __future__ import annotations

import bz2
import gzip
import os
import zlib

from loopax.src.data import dataset as _dataset
from loopax.src.data.dataset import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Dataset,
)
from loopax.src.data.strings import StringTensor, as_bytes_array
from loopax.src.tf_compat.function import TensorSpec
from loopax.src.tf_compat.tensors import document_module

_dataset.register_spec_type(TensorSpec)

_OPENERS = {None: open, "": open, "GZIP": gzip.open, "ZLIB": None, "BZ2": bz2.open}


def _filenames(filenames):
    if isinstance(filenames, Dataset):
        return [n for n in filenames.as_numpy_iterator()]
    if isinstance(filenames, (str, bytes, os.PathLike)):
        return [filenames]
    if isinstance(filenames, StringTensor):
        return list(filenames.numpy().reshape(-1)) if filenames.ndim else [filenames.numpy()]
    return list(filenames)


def _read(path, compression_type):
    path = os.fsdecode(path) if isinstance(path, bytes) else os.fspath(path)
    kind = compression_type.upper() if compression_type else None
    if kind not in _OPENERS:
        raise ValueError(f"TextLineDataset: compression_type must be None, '', 'GZIP' or "
                         f"'ZLIB'; got {compression_type!r}.")
    if kind == "ZLIB":
        with open(path, "rb") as f:
            return zlib.decompress(f.read())
    with _OPENERS[kind](path, "rb") as f:
        return f.read()


class TextLineDataset(Dataset):
    """The lines of text files, one scalar string per line (the line ending,
    `\\n` or `\\r\\n`, removed), file after file.

    Args:
        filenames: A path, a list of paths, a string Tensor or a Dataset of paths.
        compression_type: None or "" (plain), "GZIP" or "ZLIB".
        buffer_size: Accepted for TensorFlow compatibility; unused.
        num_parallel_reads: Accepted for TensorFlow compatibility (files are read in
            order).
        name: Accepted for TensorFlow compatibility; unused.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        paths = _filenames(filenames)

        def make_iterator():
            for path in paths:
                data = _read(path, compression_type)
                lines = data.split(b"\n")
                if lines and lines[-1] == b"":
                    lines.pop()
                for line in lines:
                    yield as_bytes_array(line[:-1] if line.endswith(b"\r") else line)
        super().__init__(make_iterator, UNKNOWN_CARDINALITY)


def Counter(start=0, step=1, dtype=None, name=None):  # TensorFlow's name
    """`start`, `start + step`, ... forever, as `tf.data.Dataset.counter`.

    Args:
        start: The first number.
        step: The increment.
        dtype: The dtype (default int64: int32 without JAX x64).
        name: Accepted for TensorFlow compatibility; unused.

    Returns:
        An infinite Dataset of scalars.
    """
    return Dataset.counter(start, step, dtype, name)


class _Experimental:
    """`tf.data.experimental`: the constants and the dataset functions it keeps."""

    AUTOTUNE = AUTOTUNE
    INFINITE_CARDINALITY = INFINITE_CARDINALITY
    UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY
    Counter = staticmethod(Counter)
    sample_from_datasets = staticmethod(Dataset.sample_from_datasets)
    choose_from_datasets = staticmethod(Dataset.choose_from_datasets)

    @staticmethod
    def cardinality(dataset):
        """The dataset's cardinality, as `dataset.cardinality()`."""
        return dataset.cardinality()


experimental = _Experimental()

document_module(globals())
