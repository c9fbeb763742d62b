"""Where a dataset's file is (a local path, or the checksum-checked cache under
`$LOOPAX_HOME/datasets`), and readers for the formats Keras's archives use."""

from __future__ import annotations

import io
import os
import pickle
import zipfile

import numpy as np

from loopax.src.utils import file_utils

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
    """Unpickles NumPy arrays, lists, dicts and scalars, and nothing that runs code."""

    def find_class(self, module, name):
        if (module, name) in _ARRAY_PICKLE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"Refusing to load `{module}.{name}` from a dataset file: only NumPy arrays are "
            "expected there. The file is corrupt or was tampered with; delete it and download "
            "it again.")


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


def load_npz(path, keys):
    """`{key: array}` of a `.npz` file; object arrays (ragged sequences) are
    read with `ArrayUnpickler`, never with `allow_pickle=True`.

    Raises:
        ValueError: a key in `keys` is missing.
    """
    arrays = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if member.endswith(".npy"):
                arrays[member[:-len(".npy")]] = _read_npy(io.BytesIO(archive.read(member)))
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise ValueError(f"{path} lacks arrays {missing}; this dataset's .npz holds "
                         f"{list(keys)} (it has {sorted(arrays)}).")
    return arrays


def _read_npy(stream):
    version = np.lib.format.read_magic(stream)
    header = (np.lib.format.read_array_header_1_0 if version[0] == 1
              else np.lib.format.read_array_header_2_0)
    _, _, dtype = header(stream)
    stream.seek(0)
    if not dtype.hasobject:
        return np.lib.format.read_array(stream, allow_pickle=False)
    np.lib.format.read_magic(stream)
    header(stream)
    return ArrayUnpickler(stream).load()


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
