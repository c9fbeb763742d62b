"""Where a dataset's file is (a local path, or the checksum-checked cache under
`$LOOPAX_HOME/datasets`), and readers for the formats Keras's archives use."""

from __future__ import annotations

import io
import os
import pickle
from struct import error as struct_error

import numpy as np

from loopax.src.saving import archive
from loopax.src.utils import file_utils, safe_open

# The most bytes loopax reads from one array of a dataset's `.npz` (its declared,
# uncompressed size, checked before reading). Each loader passes its own, a few
# times the largest array of the real file (MNIST's x_train: 47 MB).
MAX_NPZ_ENTRY_BYTES = 256 * 2**20
# A word index (imdb: 88,584 words, 1.6 MB) and its JSON nesting.
MAX_WORD_INDEX_BYTES = 64 * 2**20

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

    def find_class(self, module, name):
        if (module, name) in _ARRAY_PICKLE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"Refusing to load `{module}.{name}` from a dataset file: only NumPy arrays are "
            "expected there. The file is corrupt or was tampered with; delete it and download "
            "it again.")


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


def load_npz(path, keys, max_entry_bytes=MAX_NPZ_ENTRY_BYTES):
    """`{key: array}` of a `.npz` file, read with `saving.archive`'s bounded zip
    reader (each array at most `max_entry_bytes`, declared and inflated); object
    arrays (ragged sequences) are read with `ArrayUnpickler`, never with
    `allow_pickle=True`, and must hold each list once (no shared references).

    Raises:
        ValueError: a key in `keys` is missing; the file is not a regular file, is
            damaged, or holds an array over the budget (each error names the file).
    """
    arrays = {}
    with archive.open_archive(path, "a dataset .npz") as zf:
        for member in zf.namelist():
            if member.endswith(".npy"):
                data = archive.read_entry(zf, member, max_entry_bytes, path,
                                          "an array of this dataset")
                arrays[member[:-len(".npy")]] = _read_npy(io.BytesIO(data), path, member)
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise ValueError(f"{path} lacks arrays {missing}; this dataset's .npz holds "
                         f"{list(keys)} (it has {sorted(arrays)}).")
    return arrays


def _read_npy(stream, path, member):
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
    check_distinct(value, where)
    return value


def check_distinct(value, where):
    """Refuses an object array that holds one list (or array) more than once: a
    dataset file has one per sample, and a pickle can repeat a reference in 2
    bytes, which every later step would copy again."""
    if not isinstance(value, np.ndarray) or value.dtype != object:
        return
    seen = set()
    for item in value.flat:
        if isinstance(item, (list, dict, np.ndarray)):
            if id(item) in seen:
                raise ValueError(f"{where} holds the same sequence more than once (a "
                                 "shared reference in its pickle); refused: a dataset file "
                                 "holds one per sample. Delete it and download it again.")
            seen.add(id(item))


def read_word_index(path):
    """The `{word: index}` dict of a word-index JSON file (bounded, a regular file,
    errors naming the file)."""
    value = safe_open.read_json(path, MAX_WORD_INDEX_BYTES, "a word index")
    if not isinstance(value, dict):
        raise ValueError(f"{path} (a word index) is not a JSON object of words to indices; "
                         "delete it and download it again.")
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
