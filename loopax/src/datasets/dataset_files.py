"""Where a dataset's file is (a local path, or the checksum-checked cache under
`$LOOPAX_HOME/datasets`), and readers for the formats Keras's archives use."""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Sequence
from struct import error as struct_error

import numpy as np

from loopax.src.saving import archive
from loopax.src.utils import file_utils, safe_open

# The most bytes loopax reads from one array of a dataset's `.npz` (its declared,
# uncompressed size, checked before reading). Each loader passes its own, a few
# times the largest array of the real file (MNIST's x_train: 47 MB).
MAX_NPZ_ENTRY_BYTES = 256 * 2**20
# A word index's file (imdb's: 88,584 words, 1.6 MB; reuters's: 0.5 MB).
MAX_WORD_INDEX_BYTES = 16 * 2**20

# The only globals a pickled NumPy array needs (numpy < 2 and >= 2 spellings):
# anything else in a dataset's pickle (os.system, eval, ...) is refused.
_ARRAY_PICKLE_GLOBALS = frozenset({
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
})


class ArrayUnpickler(pickle.Unpickler):
    """Unpickles NumPy arrays, lists, dicts and scalars, and nothing that runs code;
    with `max_bytes`, reads at most that many bytes of `file` (what it builds is
    bounded by what it reads: a pickle makes no object without reading its opcode)."""

    def __init__(self, file, *args, max_bytes=None, where="a dataset file", **kwargs):
        if max_bytes is not None:
            file = _BoundedReader(file, max_bytes, where)
        super().__init__(file, *args, **kwargs)

    def load(self):
        return _plain(super().load())

    def find_class(self, module, name):
        if (module, name) == ("numpy", "ndarray"):
            return _NDARRAY
        if name == "_reconstruct" and (module, name) in _ARRAY_PICKLE_GLOBALS:
            return _empty_array
        if (module, name) in _ARRAY_PICKLE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"Refusing to load `{module}.{name}` from a dataset file: only NumPy arrays are "
            "expected there. The file is corrupt or was tampered with; delete it and download "
            "it again.")


class _NDARRAY:
    """`numpy.ndarray` as a pickle names it: only an argument of `_reconstruct`
    (called, it would allocate an array of any shape the pickle gives)."""

    def __new__(cls, *args, **kwargs):
        raise pickle.UnpicklingError("Refusing to call numpy.ndarray from a dataset file (it "
                                     "would allocate an array of the pickle's chosen shape); "
                                     "the file is corrupt or was tampered with.")


class _PickledArray(np.ndarray):
    """An array being unpickled: its `__setstate__` (the pickle's BUILD) checks
    that an object array's list holds exactly one item per element (NumPy 2.4
    crashes the process on a shorter one); `ArrayUnpickler.load` returns plain
    ndarrays in its place."""

    def __setstate__(self, state):
        shape, dtype, data = state[-4], state[-3], state[-1]
        if isinstance(dtype, np.dtype) and dtype.hasobject:
            size = int(np.prod(shape, dtype=object)) if isinstance(shape, tuple) else -1
            if dtype.kind != "O" or not isinstance(data, list) or len(data) != size:
                raise pickle.UnpicklingError(
                    f"Refusing a pickled {dtype} array of shape {str(shape)[:60]} whose data "
                    f"is not a list of as many items (a {type(data).__name__}); the file is "
                    "corrupt or was tampered with.")
        super().__setstate__(state)


def _empty_array(subtype, shape, dtype):
    """NumPy's `_reconstruct` as NumPy's own pickles call it: an empty array of
    `subtype` ndarray, filled by `__setstate__` with the data the pickle holds.
    Any other shape (an array allocated from a few bytes of pickle) is refused."""
    if subtype is not _NDARRAY or tuple(shape) != (0,):
        raise pickle.UnpicklingError(
            f"Refusing numpy _reconstruct({getattr(subtype, '__name__', subtype)}, "
            f"{str(shape)[:60]}) from a dataset file: NumPy pickles an array as an empty one "
            "and its data. The file is corrupt or was tampered with.")
    return np.empty((0,), dtype).view(_PickledArray)


def _plain(value):
    """`value` with `_PickledArray`s made plain ndarrays: itself, the values of a
    dict and the items of an object array (where a dataset's arrays are)."""
    if isinstance(value, dict):
        return {key: _plain_array(item) for key, item in value.items()}
    value = _plain_array(value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        for index, item in enumerate(value.flat):
            if isinstance(item, _PickledArray):
                value.flat[index] = item.view(np.ndarray)
    return value


def _plain_array(value):
    return value.view(np.ndarray) if isinstance(value, _PickledArray) else value


class _BoundedReader:
    """A binary stream that refuses to be read past `limit` bytes."""

    def __init__(self, stream, limit, where):
        self._stream, self._left, self._limit, self._where = stream, limit, limit, where

    def _count(self, data):
        self._left -= len(data)
        if self._left < 0:
            raise ValueError(f"{self._where}: its pickle goes on past {self._limit} bytes, "
                             "more than this dataset holds; refused (a damaged or "
                             "tampered file). Delete it and download it again.")
        return data

    def read(self, n=-1):
        n = self._left + 1 if n is None or n < 0 else min(n, self._left + 1)
        return self._count(self._stream.read(n))

    def readline(self, n=-1):
        n = self._left + 1 if n is None or n < 0 else min(n, self._left + 1)
        return self._count(self._stream.readline(n))

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def dataset_path(path, default_name, origin, file_hash, cache_subdir="datasets"):
    """The local path of a dataset file.

    Args:
        path: a path with a directory part (`"./imdb.npz"`, `"/data/imdb.npz"`):
            an existing local file or directory, used as is; a bare file name:
            its name in the cache, as in Keras; None: `default_name` in the cache.
        default_name, origin, file_hash: the cache name, the URL Keras downloads
            from, and its published sha256/md5 (None: not checked).

    Raises:
        FileNotFoundError: a local `path` that does not exist.
    """
    if path is not None and os.path.dirname(os.path.expanduser(str(path))):
        local = os.path.expanduser(str(path))
        if not os.path.exists(local):
            raise FileNotFoundError(
                f"No file at {str(path)!r}. Pass an existing local file, a bare file name to "
                "use in the cache, or None to download the dataset.")
        return local
    return file_utils.get_file(path or default_name, origin=origin, file_hash=file_hash,
                               cache_subdir=cache_subdir)


def load_npz(path: str, keys: Sequence[str],
             max_entry_bytes: int = MAX_NPZ_ENTRY_BYTES) -> dict[str, np.ndarray]:
    """`{key: array}` of the members `key + ".npy"` of a `.npz` file, and of no
    other member (one beside them is never decompressed), read with
    `saving.archive`'s bounded zip reader (each array at most `max_entry_bytes`,
    declared and inflated). Object arrays (ragged sequences) are read with
    `ArrayUnpickler`, never with `allow_pickle=True`, and checked by `check_sequences`.

    Raises:
        ValueError: a member of `keys` is missing; the file is not a regular file,
            is damaged, or holds an array over the budget (each error names the file).
    """
    with archive.open_archive(path, "a dataset .npz") as zf:
        members = set(zf.namelist())
        missing = [k for k in keys if f"{k}.npy" not in members]
        if missing:
            raise ValueError(
                f"{path} lacks the member(s) {[f'{k}.npy' for k in missing]}: this dataset's "
                f".npz holds the arrays {list(keys)} (it has {sorted(members)[:20]}). "
                "Is it the right file? Delete it and download it again.")
        return {key: _read_member(zf, f"{key}.npy", max_entry_bytes, path) for key in keys}


def _read_member(zf, member, max_entry_bytes, path):
    data = archive.read_entry(zf, member, max_entry_bytes, path, "an array of this dataset")
    return _read_npy(io.BytesIO(data), path, member, len(data))


def _read_npy(stream, path, member, size):
    where = f"{path} (entry {member!r})"
    try:
        version = np.lib.format.read_magic(stream)
        header = (np.lib.format.read_array_header_1_0 if version[0] == 1
                  else np.lib.format.read_array_header_2_0)
        _, _, dtype = header(stream)
        stream.seek(0)
        if not dtype.hasobject:
            return np.lib.format.read_array(stream, allow_pickle=False)
        np.lib.format.read_magic(stream)
        header(stream)
        value = ArrayUnpickler(stream).load()
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(f"{where}: {e}") from None
    except (ValueError, EOFError, TypeError, KeyError,
            AttributeError, IndexError, OverflowError, MemoryError, struct_error) as e:
        raise ValueError(f"{where} is not a NumPy array file loopax can read "
                         f"({type(e).__name__}: {str(e)[:200]}); the file is damaged or "
                         "tampered with: delete it and download it again.") from None
    check_sequences(value, where, size)
    return value


def check_sequences(value: object, where: str, size: int) -> None:
    """Refuses an object array unless it is 1-D and each entry a list, tuple or
    1-D integer array of ints (word indices), holding in all (an entry counted
    each time it is referenced) at most `size` indices: a pickle spends at least
    2 bytes on each int it holds, but 2 bytes on a repeated reference to a whole
    list, which every later step would copy again."""
    if not isinstance(value, np.ndarray) or value.dtype != object:
        return
    if value.ndim != 1:
        raise _not_sequences(where, f"an object array of shape {value.shape}")
    checked: dict[int, int] = {}
    total = len(value)
    for i, entry in enumerate(value):
        length = checked.get(id(entry))
        if length is None:
            length = checked[id(entry)] = _sequence_length(entry, where, i)
        total += length
        if total > size:
            raise ValueError(
                f"{where} holds more word indices ({total:,} by entry {i}, counting each "
                f"repeated reference to one sequence) than its {size:,} bytes hold once "
                "each; refused (a pickle repeating references expands far past its size). "
                "Delete the file and download it again.")


def _sequence_length(entry, where, i):
    if isinstance(entry, np.ndarray):
        if entry.ndim != 1 or entry.dtype.kind not in "iu":
            raise _not_sequences(where, f"entry {i}: an array of {entry.dtype} "
                                        f"{entry.shape}")
        return entry.size
    if not isinstance(entry, (list, tuple)):
        raise _not_sequences(where, f"entry {i}: a {type(entry).__name__}")
    for kind in set(map(type, entry)) - {int}:   # one pass in C; NumPy ints are fine too
        if not issubclass(kind, np.integer):
            raise _not_sequences(where, f"entry {i} holds a {kind.__name__}")
    return len(entry)


def _not_sequences(where, found):
    return ValueError(f"{where} is not a 1-D array of sequences of int word indices (one "
                      f"list per sample) as this dataset holds ({found}); delete the file and "
                      "download it again.")


def check_samples(path: str, x: np.ndarray, y: np.ndarray, x_key: str, y_key: str) -> None:
    """Refuses sequences `x` that are neither an object array (checked by
    `check_sequences`) nor a 2-D integer array, and labels `y` that are not a
    1-D numeric array as long as `x`."""
    if x.dtype != object and (x.ndim != 2 or x.dtype.kind not in "iu"):
        raise ValueError(f"{path}: {x_key!r} is a {x.dtype} array of shape {x.shape}; this "
                         "dataset's samples are a 1-D object array of lists of int word "
                         "indices. Delete the file and download it again.")
    if y.dtype.kind not in "iuf" or y.ndim != 1:
        raise ValueError(f"{path}: {y_key!r} is a {y.dtype} array of shape {y.shape}; this "
                         "dataset's labels are a 1-D integer array. Delete the file and "
                         "download it again.")
    if len(x) != len(y):
        raise ValueError(f"{path}: {x_key!r} holds {len(x)} samples but {y_key!r} "
                         f"{len(y)} labels; they must be as many. Delete the file and "
                         "download it again.")


def read_word_index(path: str) -> dict[str, int]:
    """The `{word: index}` dict of a word-index JSON file: a regular file of at
    most `MAX_WORD_INDEX_BYTES` of UTF-8 JSON, nested at most
    `safe_open.MAX_JSON_DEPTH`, a JSON object of words to ints (errors name the file)."""
    what = "a word index"
    data = safe_open.read_bytes(path, MAX_WORD_INDEX_BYTES, what)
    value = safe_open.parse_json(safe_open.decode(data, path, what), path, what)
    if not isinstance(value, dict):
        raise ValueError(f"{path} (a word index) is a JSON {type(value).__name__}, not a JSON "
                         "object of words to int indices; delete it and download it again.")
    for word, index in value.items():
        if not isinstance(index, int) or isinstance(index, bool):
            raise ValueError(f"{path} (a word index) maps {word[:60]!r} to "
                             f"{str(index)[:60]} (a {type(index).__name__}), not to an int "
                             "index; a word index is a JSON object of words to ints. Delete "
                             "it and download it again.")
    return value


def shuffled(seed, *arrays):
    """`arrays` reordered by one `np.random.RandomState(seed)` permutation (as Keras's)."""
    indices = np.arange(len(arrays[0]))
    np.random.RandomState(seed).shuffle(indices)
    return [a[indices] for a in arrays]


def split_at_fraction(test_split, *arrays):
    """`(train, test)` tuples: the first `int(n * (1 - test_split))` samples train."""
    cut = int(len(arrays[0]) * (1 - test_split))
    return tuple(np.array(a[:cut]) for a in arrays), tuple(np.array(a[cut:]) for a in arrays)


def check_test_split(test_split):
    if not 0 <= test_split < 1:
        raise ValueError(f"`test_split` must be in [0, 1) (the fraction of samples kept for "
                         f"testing). Received: test_split={test_split}")
