"""`tf.data`: `Dataset` (loopax.src.data.dataset, the one dataset type the data
utilities return too), `TextLineDataset`, `TFRecordDataset`, `experimental` (with the CSV readers of
csv_data.py) and the constants."""

from __future__ import annotations

from loopax.src.data import dataset as _dataset
from loopax.src.data.dataset import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Dataset,
)
from loopax.src.data.strings import as_bytes_array
from loopax.src.tf_compat import files
from loopax.src.tf_compat.csv_data import CsvDataset, make_csv_dataset
from loopax.src.tf_compat.function import TensorSpec
from loopax.src.tf_compat.tensors import document_module

_dataset.register_spec_type(TensorSpec)

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
        paths = files.file_paths(filenames)

        def make_iterator():
            for path in paths:
                data = files.read_bytes(path, compression_type)
                lines = data.split(b"\n")
                if lines and lines[-1] == b"":
                    lines.pop()
                for line in lines:
                    yield as_bytes_array(line[:-1] if line.endswith(b"\r") else line)
        super().__init__(make_iterator, UNKNOWN_CARDINALITY)


class TFRecordDataset(Dataset):
    """The records of TFRecord files, one scalar string (the record's bytes) each,
    file after file. TFRecord is a framing of byte strings (length, CRC, data, CRC);
    the records are read as bytes (the CRCs are not checked). Parsing them as
    `tf.train.Example` protos is TensorFlow's and stays out (`tf.io.parse_example`
    names the loopax way).

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
        paths = files.file_paths(filenames)

        def make_iterator():
            for path in paths:
                data = files.read_bytes(path, compression_type)
                at = 0
                while at < len(data):
                    if at + 12 > len(data):
                        raise ValueError(f"TFRecordDataset: {path!r} ends inside a record "
                                         f"header at byte {at} (a truncated file).")
                    length = int.from_bytes(data[at:at + 8], "little")
                    start, at = at + 12, at + 12 + length + 4
                    if at > len(data):
                        raise ValueError(f"TFRecordDataset: {path!r} ends inside a record "
                                         f"of {length} bytes (a truncated file).")
                    yield as_bytes_array(data[start:start + length])
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
    CsvDataset = CsvDataset
    make_csv_dataset = staticmethod(make_csv_dataset)

    @staticmethod
    def cardinality(dataset):
        """The dataset's cardinality, as `dataset.cardinality()`."""
        return dataset.cardinality()


experimental = _Experimental()

document_module(globals())
