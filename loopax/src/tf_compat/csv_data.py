"""`tf.data.experimental.CsvDataset` and `make_csv_dataset`: CSV files read on the host,
one record a row, as TensorFlow's CSV readers (the load_data/csv tutorial's idioms)."""

from __future__ import annotations

import collections
import csv
import glob
import io
import os
from typing import Any, Iterator, Sequence

import jax
import numpy as np

from loopax.src.data.dataset import UNKNOWN_CARDINALITY, Dataset
from loopax.src.data.strings import STRING, as_bytes_array
from loopax.src.state import Variable
from loopax.src.tensor import Tensor
from loopax.src.tf_compat.files import file_paths, read_bytes

# The types a column can have, least permissive first (TensorFlow's inference order).
_INFERENCE_ORDER = (np.dtype("int32"), np.dtype("int64"), np.dtype("float32"),
                    np.dtype("float64"), STRING)
_CSV_TYPES = frozenset(_INFERENCE_ORDER)


class _Column:
    """How one CSV field becomes a value: its dtype, and the default for an empty
    (or `na_value`) field; None makes the field required."""

    def __init__(self, dtype: np.dtype, default: Any = None):
        self.dtype, self.default = dtype, default

    def parse(self, field: str, na_value: str, where: str) -> np.ndarray:
        if field == "" or field == na_value:
            if self.default is None:
                raise ValueError(f"{where}: the field is required (its record_defaults "
                                 f"entry is the dtype {self.dtype.name}) but missing; "
                                 f"give a default value instead, e.g. [0] or [''].")
            return np.asarray(self.default, self.dtype)
        if self.dtype == STRING:
            return as_bytes_array(field)
        try:
            value = int(field) if self.dtype.kind == "i" else float(field)
        except ValueError:
            raise ValueError(f"{where}: {field!r} is not a valid {self.dtype.name}.") from None
        return _fitted(value, self.dtype, where)


def _fitted(value: int | float, dtype: np.dtype, where: str) -> np.ndarray:
    """`value` as a 0-d array of `dtype`; an integer that loopax would store
    truncated (int64 without JAX's x64 mode) is refused, not wrapped."""
    stored = jax.dtypes.canonicalize_dtype(dtype)
    if dtype.kind == "i" and not np.iinfo(stored).min <= value <= np.iinfo(stored).max:
        raise ValueError(f"{where}: {value} does not fit in {np.dtype(stored).name} "
                         f"(int64 needs JAX's x64 mode: jax.config.update('jax_enable_x64', "
                         f"True)); or read the column as tf.float32 or tf.string.")
    return np.asarray(value, dtype)


def _named_dtype(entry: Any) -> np.dtype | None:
    """`entry` as a dtype when it names one (`tf.float32`, `np.int32`, `jnp.float32`,
    `str`), else None."""
    if isinstance(entry, np.dtype):
        return entry
    if entry in (str, bytes):
        return STRING
    if isinstance(entry, type) or (callable(entry) and hasattr(entry, "dtype")):
        return np.dtype(entry)
    return None


def _column_from_default(entry: Any, index: int) -> _Column:
    """A `record_defaults` entry: a dtype (a required field), or a default value
    (a Python value, `[value]` or a Tensor of one value; an empty one is required)."""
    if isinstance(entry, (Tensor, Variable)):
        entry = entry.numpy()
    dtype = _named_dtype(entry)
    if dtype is not None:
        if dtype not in _CSV_TYPES:
            raise ValueError(f"record_defaults[{index}]: the dtype {dtype} is not one a CSV "
                             f"column can have (int32, int64, float32, float64, string).")
        return _Column(dtype)
    if isinstance(entry, list) and len(entry) == 1:
        entry = entry[0]
    if isinstance(entry, (str, bytes)):
        return _Column(STRING, as_bytes_array(entry))
    if isinstance(entry, bool) or not isinstance(entry, (int, float, np.ndarray, np.generic)):
        raise ValueError(f"record_defaults[{index}]: expected a dtype or a default value (a "
                         f"number, a string, or a list or Tensor of one), got {entry!r}.")
    if isinstance(entry, (int, float)):   # Python numbers: int32 and float32, as tf.constant
        return _Column(np.dtype("int32" if isinstance(entry, int) else "float32"), entry)
    values = np.asarray(entry)
    dtype = STRING if values.dtype.kind in "SUO" else values.dtype
    if dtype not in _CSV_TYPES:
        raise ValueError(f"record_defaults[{index}]: a default of dtype {dtype} is not one a "
                         f"CSV column can have (int32, int64, float32, float64, string).")
    if values.size > 1:
        raise ValueError(f"record_defaults[{index}]: a default is one value (or a dtype for "
                         f"a required field), got {values.size} values.")
    if values.size == 0:
        return _Column(dtype)   # TensorFlow's `tf.constant([], dtype)`: required
    value = values.reshape(-1)[0]
    return _Column(dtype, as_bytes_array(value) if dtype == STRING else value)


def _rows(path: str | bytes, field_delim: str, use_quote_delim: bool,
          compression_type: str | None, header: bool) -> Iterator[tuple[str, list[str]]]:
    """(where, fields) for each record of one CSV file, the header skipped."""
    name = os.fsdecode(path)
    text = io.StringIO(read_bytes(path, compression_type).decode("utf-8"), newline="")
    reader = csv.reader(text, delimiter=field_delim,
                        quoting=csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE)
    for fields in reader:
        if header and reader.line_num == 1:
            continue
        yield f"{name}, line {reader.line_num}", fields or [""]


class CsvDataset(Dataset):
    """The records of CSV files, one tuple of scalar Tensors a record, as
    `tf.data.experimental.CsvDataset`.

    Args:
        filenames: A path, a list of paths, a string Tensor or a Dataset of paths.
        record_defaults: One entry per column read: a dtype (`tf.int32`, `tf.int64`,
            `tf.float32`, `tf.float64`, `tf.string`) for a required field, or a default
            value (`0`, `[0.0]`, `""`, a Tensor of one value) used for empty fields.
        compression_type: None or "" (plain), "GZIP" or "ZLIB".
        buffer_size: Accepted for TensorFlow compatibility; unused.
        header: Whether each file's first line is a header (skipped).
        field_delim: The field separator.
        use_quote_delim: Whether double quotes enclose fields (`""` is one quote).
        na_value: A field text read as empty (its column's default).
        select_cols: The indices of the columns read (the others are skipped).
        exclude_cols: The indices of the columns not read (instead of `select_cols`).
        name: Accepted for TensorFlow compatibility; unused.
    """

    def __init__(self, filenames: Any, record_defaults: Sequence[Any],
                 compression_type: str | None = None, buffer_size: int | None = None,
                 header: bool = False, field_delim: str = ",", use_quote_delim: bool = True,
                 na_value: str = "", select_cols: Sequence[int] | None = None,
                 exclude_cols: Sequence[int] | None = None, name: str | None = None):
        columns = [_column_from_default(d, i) for i, d in enumerate(record_defaults)]
        if not columns:
            raise ValueError("CsvDataset: record_defaults must name at least one column.")
        if select_cols is not None and exclude_cols is not None:
            raise ValueError("CsvDataset: give select_cols or exclude_cols, not both.")
        if select_cols is not None and len(select_cols) != len(columns):
            raise ValueError(f"CsvDataset: select_cols has {len(select_cols)} columns but "
                             f"record_defaults {len(columns)}; give one entry per column read.")
        if len(field_delim) != 1:
            raise ValueError(f"CsvDataset: field_delim must be one character, got "
                             f"{field_delim!r}.")
        paths = file_paths(filenames)

        def make_iterator():
            for path in paths:
                for where, fields in _rows(path, field_delim, use_quote_delim,
                                           compression_type, header):
                    picked = _picked_fields(fields, len(columns), select_cols, exclude_cols,
                                            where)
                    yield tuple(column.parse(field, na_value, f"CsvDataset: {where}, field "
                                             f"{i}") for i, (column, field)
                                in enumerate(zip(columns, picked)))
        super().__init__(make_iterator, UNKNOWN_CARDINALITY)


def _picked_fields(fields: list[str], count: int, select_cols: Sequence[int] | None,
                   exclude_cols: Sequence[int] | None, where: str) -> list[str]:
    """The fields of the columns read, in file order; an error when the record has
    another number of them."""
    if select_cols is not None:
        wanted = sorted(int(i) for i in select_cols)
    elif exclude_cols is not None:
        excluded = {int(i) for i in exclude_cols}
        wanted = [i for i in range(len(fields)) if i not in excluded]
    else:
        wanted = list(range(len(fields)))
    if len(wanted) != count or (wanted and wanted[-1] >= len(fields)):
        raise ValueError(f"CsvDataset: {where} has {len(fields)} fields; record_defaults "
                         f"has {count} columns (check field_delim, header, select_cols).")
    return [fields[i] for i in wanted]


# ---- make_csv_dataset ------------------------------------------------------------------

def _file_names(file_pattern: Any) -> list[str]:
    """The files a glob pattern (or a list of them) matches, sorted."""
    patterns = [file_pattern] if isinstance(file_pattern, (str, bytes, os.PathLike)) \
        else list(file_pattern)
    if not patterns:
        raise ValueError("make_csv_dataset: file_pattern must not be empty.")
    names = [name for p in patterns for name in glob.glob(os.fsdecode(p))]
    if not names:
        raise ValueError(f"make_csv_dataset: no files match file_pattern {file_pattern!r}.")
    return sorted(names)


def _header(path: str, field_delim: str, use_quote_delim: bool,
            compression_type: str | None) -> list[str]:
    for _, fields in _rows(path, field_delim, use_quote_delim, compression_type, False):
        return fields
    raise ValueError(f"make_csv_dataset: {path} is empty: it has no header line.")


def _column_names(paths: list[str], field_delim: str, use_quote_delim: bool,
                  compression_type: str | None) -> list[str]:
    """The header of the first file; every file must have the same."""
    names = _header(paths[0], field_delim, use_quote_delim, compression_type)
    for path in paths[1:]:
        if _header(path, field_delim, use_quote_delim, compression_type) != names:
            raise ValueError(f"make_csv_dataset: every file must have the header of "
                             f"{paths[0]} ({names}); {path} has another.")
    return names


def _selected_indices(select_columns: Sequence[Any], column_names: list[str]) -> list[int]:
    """`select_columns` (names or indices) as sorted column indices."""
    indices = []
    for column in select_columns:
        if isinstance(column, (int, np.integer)):
            if not 0 <= column < len(column_names):
                raise ValueError(f"make_csv_dataset: select_columns index {column} is out "
                                 f"of range: there are {len(column_names)} columns.")
            indices.append(int(column))
        elif column in column_names:
            indices.append(column_names.index(column))
        else:
            raise ValueError(f"make_csv_dataset: select_columns names {column!r}, which is "
                             f"not a column: {column_names}.")
    if len(set(indices)) != len(indices):
        raise ValueError(f"make_csv_dataset: select_columns has duplicate columns: "
                         f"{list(select_columns)}.")
    return sorted(indices)


def _inferred_type(field: str, na_value: str, previous: np.dtype | None) -> np.dtype | None:
    """The least permissive type that holds `field` and the column's earlier values."""
    if field in ("", na_value):
        return previous
    start = 0 if previous is None else _INFERENCE_ORDER.index(previous)
    for dtype in _INFERENCE_ORDER[start:]:
        if _holds(dtype, field):
            return dtype
    return STRING


def _holds(dtype: np.dtype, field: str) -> bool:
    if dtype == STRING:
        return True
    try:
        if dtype.kind == "i":
            return np.iinfo(dtype).min <= int(field) <= np.iinfo(dtype).max
        return bool(abs(dtype.type(float(field))) < np.inf) or field.strip().lower() in (
            "inf", "+inf", "-inf", "infinity")
    except (ValueError, OverflowError):
        return False


def _inferred_defaults(paths: list[str], indices: list[int], options: dict[str, Any],
                       num_rows: int | None) -> list[Any]:
    """Defaults (0 or "") of the types the first `num_rows` records show."""
    types: list[np.dtype | None] = [None] * len(indices)
    seen = 0
    for path in paths:
        for where, fields in _rows(path, options["field_delim"], options["use_quote_delim"],
                                   options["compression_type"], options["header"]):
            if num_rows is not None and seen >= num_rows:
                break
            if max(indices) >= len(fields):
                raise ValueError(f"make_csv_dataset: {where} has {len(fields)} fields; "
                                 f"expected {max(indices) + 1} or more.")
            types = [_inferred_type(fields[i], options["na_value"], t)
                     for i, t in zip(indices, types)]
            seen += 1
    return ["" if t in (None, STRING) else np.zeros((), t) for t in types]


def make_csv_dataset(file_pattern: Any, batch_size: int, column_names: Sequence[str] | None = None,
                     column_defaults: Sequence[Any] | None = None, label_name: str | None = None,
                     select_columns: Sequence[Any] | None = None, field_delim: str = ",",
                     use_quote_delim: bool = True, na_value: str = "", header: bool = True,
                     num_epochs: int | None = None, shuffle: bool = True,
                     shuffle_buffer_size: int = 10000, shuffle_seed: int | None = None,
                     prefetch_buffer_size: int | None = None,
                     num_parallel_reads: int | None = None, sloppy: bool = False,
                     num_rows_for_inference: int | None = 100,
                     compression_type: str | None = None, ignore_errors: bool = False,
                     encoding: str = "utf-8") -> Dataset:
    """Batches of CSV records as `(features, label)`, with `features` an OrderedDict
    from column name to a batch Tensor, as `tf.data.experimental.make_csv_dataset`.

    Column names come from the header (or `column_names`), column types from the
    first `num_rows_for_inference` records (int32, int64, float32, float64 or
    string; empty fields default to 0 or "") unless `column_defaults` gives them.
    The files, then the records, are shuffled with `shuffle_seed`; the records
    repeat `num_epochs` times (None: forever, every batch full).

    Args:
        file_pattern: A glob pattern, or a list of them, matching the CSV files.
        batch_size: Records per batch.
        column_names: The names of all columns (default: the header's).
        column_defaults: One `CsvDataset` record default per column read (a dtype for
            a required field, or a default value).
        label_name: The column returned apart as the label; None returns the dict alone.
        select_columns: The columns read, by name or index.
        field_delim: The field separator.
        use_quote_delim: Whether double quotes enclose fields.
        na_value: A field text read as empty.
        header: Whether each file's first line is a header.
        num_epochs: Passes over the data; None repeats forever.
        shuffle: Whether to shuffle the files and the records.
        shuffle_buffer_size: The records' shuffle buffer.
        shuffle_seed: An int for a repeatable order.
        prefetch_buffer_size: Accepted for TensorFlow compatibility; unused.
        num_parallel_reads: Accepted for TensorFlow compatibility (files are read in
            turn).
        sloppy: Accepted for TensorFlow compatibility; unused.
        num_rows_for_inference: Records read to infer the column types (None: all).
        compression_type: None or "" (plain), "GZIP" or "ZLIB".
        ignore_errors: Accepted for TensorFlow compatibility; a bad record raises.
        encoding: Only "utf-8" is read.

    Returns:
        A Dataset of `(features, label)` batches (or of `features`).
    """
    if encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise ValueError(f"make_csv_dataset: encoding {encoding!r}: only UTF-8 is read; "
                         f"convert the files to UTF-8 first.")
    paths = _file_names(file_pattern)
    if column_names is None:
        if not header:
            raise ValueError("make_csv_dataset: give column_names, or header=True to read "
                             "them from the files' first line.")
        column_names = _column_names(paths, field_delim, use_quote_delim, compression_type)
    column_names = list(column_names)
    if len(set(column_names)) != len(column_names):
        raise ValueError(f"make_csv_dataset: duplicate column names in {column_names}.")
    indices = list(range(len(column_names))) if select_columns is None \
        else _selected_indices(select_columns, column_names)
    options = dict(field_delim=field_delim, use_quote_delim=use_quote_delim,
                   na_value=na_value, header=header, compression_type=compression_type)
    if column_defaults is None:
        column_defaults = _inferred_defaults(paths, indices, options, num_rows_for_inference)
    elif len(column_defaults) != len(indices):
        raise ValueError(f"make_csv_dataset: column_defaults has {len(column_defaults)} "
                         f"entries for {len(indices)} columns read; give one per column.")
    names = [column_names[i] for i in indices]
    if label_name is not None and label_name not in names:
        raise ValueError(f"make_csv_dataset: label_name {label_name!r} must be one of the "
                         f"columns read: {names}.")
    select_cols = indices if select_columns is not None else None

    def records_of(path):
        return CsvDataset(path, column_defaults, select_cols=select_cols, **options)

    files = Dataset.from_tensor_slices(paths)
    if shuffle:
        files = files.shuffle(len(paths), shuffle_seed)
    records = files.flat_map(records_of)
    if shuffle:
        records = records.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        records = records.repeat(num_epochs)
    batches = records.batch(batch_size, drop_remainder=num_epochs is None)
    return batches.map(lambda *columns: _features(names, columns, label_name))


def _features(names: list[str], columns: tuple, label_name: str | None) -> Any:
    features = collections.OrderedDict(zip(names, columns))
    if label_name is None:
        return features
    label = features.pop(label_name)
    return features, label
