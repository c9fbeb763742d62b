"""A dataset `.npz` is read member by member: only the arrays its loader expects
are decompressed (a bomb beside x_train costs nothing), a missing one is named;
object arrays and CIFAR batches are counted as what they expand to (a repeated
reference counts each time), so a 0.1 MB file cannot become gigabytes; a word
index is UTF-8 JSON of words to ints within 16 MiB; malformed contents name the
file and what was expected."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import subprocess
import sys
import tarfile
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import loopax
from loopax.src.datasets import cifar, dataset_files


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _sequences(items):
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _write_npz(path, arrays, extra=None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for key, array in arrays.items():
            zf.writestr(f"{key}.npy", _npy(array))
        for name, data in (extra or {}).items():
            zf.writestr(name, data)


def _mnist_arrays():
    rng = np.random.default_rng(0)
    return {"x_train": rng.integers(0, 255, (6, 28, 28), dtype=np.uint8),
            "y_train": np.arange(6, dtype=np.uint8),
            "x_test": rng.integers(0, 255, (2, 28, 28), dtype=np.uint8),
            "y_test": np.arange(2, dtype=np.uint8)}


@pytest.mark.parametrize("bomb_mib", [48, 300])
def test_a_bomb_member_beside_the_arrays_is_never_decompressed(tmp_path, bomb_mib):
    """48 MiB (under mnist's 64 MiB budget) or 300 MiB of zeros in 'bomb.npy',
    deflated to < 0.5 MB: main inflated the first (48 MiB allocated) and refused
    the whole file for the second; the loader needs neither."""
    arrays = _mnist_arrays()
    path = tmp_path / "mnist.npz"
    _write_npz(path, arrays, {"bomb.npy": _npy(np.zeros(bomb_mib * 2**20, np.uint8))})
    assert path.stat().st_size < 2**20
    tracemalloc.start()
    try:
        (x_train, y_train), (x_test, y_test) = loopax.datasets.mnist.load_data(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20
    np.testing.assert_array_equal(x_train, arrays["x_train"])
    np.testing.assert_array_equal(y_test, arrays["y_test"])


def test_a_missing_member_names_the_file_and_the_member(tmp_path):
    arrays = _mnist_arrays()
    del arrays["y_test"]
    path = tmp_path / "mnist.npz"
    _write_npz(path, arrays, {"y_tset.npy": _npy(np.arange(2))})
    with pytest.raises(ValueError, match=r"mnist.npz lacks the member\(s\) \['y_test.npy'\]"):
        loopax.datasets.mnist.load_data(str(path))


def _imdb_file(path, x_train, y_train=None):
    y_train = np.zeros(len(x_train), np.int64) if y_train is None else y_train
    x_test = _sequences([[5, 6, 7]])
    np.savez_compressed(
        path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=np.zeros(1, int)
    )


@pytest.mark.parametrize("container", ["tuple", "nested-tuple", "list"])
def test_repeated_references_are_counted_and_refused_quickly(tmp_path, container):
    """One sequence of 20,000 indices referenced 50,000 times: a 0.1 MB file that
    would expand to 10**9 indices (8 GB of list slots alone); main let tuples
    through (and built them), and named no budget."""
    shared = tuple(range(20_000)) if container != "list" else list(range(20_000))
    if container == "nested-tuple":   # each entry its own list, holding the shared tuple
        x = _sequences([[shared] for _ in range(10)])
    else:
        x = _sequences([shared] * 50_000)
    path = tmp_path / "imdb.npz"
    _imdb_file(path, x)
    assert path.stat().st_size < 0.15 * 2**20
    start = time.perf_counter()
    message = (r"holds a tuple" if container == "nested-tuple" else
               r"imdb.npz \(entry 'x_train.npy'\) holds more word indices .* counting each "
               "repeated reference")
    with pytest.raises(ValueError, match=message):
        loopax.datasets.imdb.load_data(str(path))
    assert time.perf_counter() - start < 5


def test_a_few_repeated_references_still_load_as_keras_loads_them(tmp_path):
    """A file whose 3 samples share one short list (as `[[1, 2]] * 3` saves) is
    within what its bytes could hold: it loads, each sample its own list."""
    x = _sequences([[4, 5]] * 3)
    path = tmp_path / "imdb.npz"
    _imdb_file(path, x, np.array([0, 1, 0]))
    (x_train, y_train), _ = loopax.datasets.imdb.load_data(str(path), seed=0)
    assert sorted(map(list, x_train)) == [[1, 7, 8]] * 3
    assert sorted(y_train.tolist()) == [0, 0, 1]


def test_cifar_rows_sharing_one_object_are_refused(tmp_path):
    """'data' a list of 200,000 references to one 3,072-byte row: a 0.3 MB pickle
    that main expanded with np.asarray to 600 MB (and more with more rows)."""
    row = list(range(256)) * 12
    payload = pickle.dumps({b"data": [row] * 200_000, b"labels": [0] * 200_000}, protocol=4)
    assert len(payload) < 2**20
    path = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_1")
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"cifar-10-python.tar.gz: cifar-10-batches-py/"
                                             r"data_batch_1: 'data' is a list; a CIFAR batch "
                                             r"holds a uint8 array \(images, 3072\)"):
            loopax.datasets.cifar10.load_data(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20
    data = np.arange(2 * 3072, dtype=np.int64).astype(np.uint8).reshape(2, 3072)
    folder = _cifar_dir(tmp_path, {b"data": data, b"labels": [3, 7]})   # a real batch's form
    (x_train, y_train), (x_test, y_test) = loopax.datasets.cifar10.load_data(str(folder))
    assert x_train.shape == (10, 32, 32, 3) and y_test.tolist() == [[3], [7]]
    np.testing.assert_array_equal(x_test[1], data[1].reshape(3, 32, 32).transpose(1, 2, 0))


def _cifar_dir(tmp_path, batch):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (folder / name).write_bytes(pickle.dumps(batch))
    return folder


@pytest.mark.parametrize("data, labels, expected", [
    (np.zeros((2, 3072), np.float64), [0, 1], r"'data' is a float64 array of shape \(2, 3072\)"),
    (np.zeros((2, 100), np.uint8), [0, 1], r"'data' is a uint8 array of shape \(2, 100\)"),
    (np.zeros((2, 3072), np.uint8), [0], r"'labels' is not 2 int labels"),
    (np.zeros((2, 3072), np.uint8), [[0], [1]], r"'labels' is not 2 int labels"),
], ids=["float-data", "wrong-shape", "too-few-labels", "list-labels"])
def test_malformed_cifar_batches_name_the_file_and_what_was_expected(tmp_path, data, labels,
                                                                     expected):
    folder = _cifar_dir(tmp_path, {b"data": data, b"labels": labels})
    with pytest.raises(ValueError, match=r"cifar-10-batches-py: cifar-10-batches-py/"
                                         r"data_batch_1: " + expected):
        loopax.datasets.cifar10.load_data(str(folder))


@pytest.mark.parametrize("x_train, y_train, expected", [
    (np.arange(3), np.zeros(3, int), r"'x_train' is a int64 array of shape \(3,\)"),
    (_sequences([[1], [2]]), np.zeros(3, int), r"'x_train' holds 2 samples but 'y_train' 3"),
    (_sequences([[1], [2]]), np.array(["a", "b"]), r"'y_train' is a <U1 array"),
    (_sequences([[1], [2.5]]), np.zeros(2, int), r"entry 1 holds a float"),
    (_sequences([[1], "ab"]), np.zeros(2, int), r"entry 1: a str"),
], ids=["int-x", "lengths", "str-labels", "float-index", "str-entry"])
def test_malformed_imdb_contents_name_the_file_and_what_was_expected(tmp_path, x_train,
                                                                     y_train, expected):
    path = tmp_path / "imdb.npz"
    _imdb_file(path, x_train, y_train)
    with pytest.raises(ValueError, match=r"imdb.npz.*" + expected):
        loopax.datasets.imdb.load_data(str(path))


def test_a_word_index_must_map_words_to_ints(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"the": 1, "film": [2]}))
    with pytest.raises(ValueError, match=r"w.json \(a word index\) maps 'film' to \[2\] \(a "
                                         r"list\), not to an int index"):
        loopax.datasets.reuters.get_word_index(str(path))
    path.write_text(json.dumps({"the": 1, "film": 2}))
    assert loopax.datasets.reuters.get_word_index(str(path)) == {"the": 1, "film": 2}


def test_a_word_index_must_be_utf8(tmp_path):
    """json.loads reads UTF-16 bytes as JSON; Keras reads the file as text (UTF-8)."""
    path = tmp_path / "w.json"
    path.write_bytes(json.dumps({"the": 1}).encode("utf-16"))
    with pytest.raises(ValueError, match=r"w.json \(a word index\) is not utf-8 text"):
        loopax.datasets.imdb.get_word_index(str(path))


def test_a_word_index_over_16_mib_is_refused_before_parsing(tmp_path):
    """10x the real imdb index (1.6 MB); main read and parsed up to 64 MiB."""
    path = tmp_path / "w.json"
    path.write_text("[" + "0," * (9 * 2**20) + "0]")
    assert path.stat().st_size > 16 * 2**20
    with pytest.raises(ValueError, match=r"w.json \(a word index\) holds \d+ bytes or more"):
        loopax.datasets.imdb.get_word_index(str(path))
    assert dataset_files.MAX_WORD_INDEX_BYTES == 16 * 2**20


# numpy.core.multiarray._reconstruct(numpy.ndarray, (1_000_000, 3072), b"B"), protocol 2:
# 62 bytes that main unpickled into a 3 GB uint8 array, passing as a CIFAR batch's data.
_RECONSTRUCT_3_GB = (b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n"
                     b"J\x40\x42\x0f\x00M\x00\x0c\x86C\x01B\x87R.")
# numpy.ndarray((10_000_000,), "O"): main built an 80 MB object array of None.
_NDARRAY_OF_10_MILLION = b"\x80\x02cnumpy\nndarray\nJ\x80\x96\x98\x00\x85C\x01O\x86R."


@pytest.mark.parametrize("payload, refused", [
    (_RECONSTRUCT_3_GB, r"Refusing numpy _reconstruct\(_NDARRAY, \(1000000, 3072\)\)"),
    (_NDARRAY_OF_10_MILLION, r"Refusing to call numpy.ndarray"),
], ids=["reconstruct-shape", "ndarray-call"])
def test_a_pickle_cannot_allocate_an_array_of_its_chosen_shape(tmp_path, payload, refused):
    (tmp_path / "data_batch_1").write_bytes(payload)
    tracemalloc.start()
    try:
        with pytest.raises(pickle.UnpicklingError, match=r"data_batch_1.*: " + refused):
            cifar._unpickle(str(tmp_path), "cifar-10-batches-py/data_batch_1")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)   # NumPy's own pickle still loads
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps({b"data": array}, protocol=4))
    loaded = cifar._unpickle(str(tmp_path), "cifar-10-batches-py/data_batch_1")[b"data"]
    assert type(loaded) is np.ndarray
    np.testing.assert_array_equal(loaded, array)


_SHORT_LIST_NPZ = '''
import pickle, sys, zipfile
import numpy as np

class ShortObjectArray:   # an object array of 10**7 items whose pickled list is empty
    def __reduce__(self):
        return (np._core.multiarray._reconstruct, (np.ndarray, (0,), b"b"),
                (1, (10**7,), np.dtype("O"), False, []))

with zipfile.ZipFile(sys.argv[1], "w") as zf:
    for key in ("x_train", "y_train", "x_test", "y_test"):
        with zf.open(key + ".npy", "w") as f:
            np.lib.format.write_array_header_1_0(
                f, {"descr": "|O", "fortran_order": False, "shape": (1,)})
            f.write(pickle.dumps(ShortObjectArray(), protocol=3))
import loopax
try:
    loopax.datasets.imdb.load_data(sys.argv[1])
except pickle.UnpicklingError as e:
    print(e)
'''


def test_an_object_array_whose_pickled_list_is_short_is_refused_not_crashing(tmp_path):
    """NumPy 2.4's ndarray.__setstate__ crashes the process (SIGSEGV) on an object
    array whose list is shorter than its shape; main let the pickle call it. Run in
    a subprocess, so that a crash fails this test rather than the test run."""
    result = subprocess.run([sys.executable, "-c", _SHORT_LIST_NPZ, str(tmp_path / "imdb.npz")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "imdb.npz (entry 'x_train.npy'): Refusing a pickled object array of shape " \
           "(10000000,) whose data is not a list of as many items" in result.stdout


def _write_idx(path, payload, header_bytes):
    with gzip.open(path, "wb") as f:
        f.write(b"\0" * header_bytes + payload)


def test_malformed_fashion_mnist_files_name_the_file(tmp_path):
    """Keras reads the pixels after a 16-byte header as (labels, 28, 28); main's
    reshape error (or numpy's offset error) named no file."""
    names = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")
    for name, payload, header in zip(names, (b"\1\2", b"\0" * 784 * 2, b"\3", b"\0" * 784),
                                     (8, 16, 8, 16)):
        _write_idx(tmp_path / name, payload, header)
    (x_train, y_train), _ = loopax.datasets.fashion_mnist.load_data(str(tmp_path))
    assert x_train.shape == (2, 28, 28) and y_train.tolist() == [1, 2]
    _write_idx(tmp_path / names[3], b"\0" * 700, 16)
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte.gz holds 700 bytes of "
                                         r"pixels after its header, not 1 images of 28 x 28"):
        loopax.datasets.fashion_mnist.load_data(str(tmp_path))
    _write_idx(tmp_path / names[2], b"", 4)
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte.gz holds 4 bytes, fewer "
                                         r"than its IDX header \(8\)"):
        loopax.datasets.fashion_mnist.load_data(str(tmp_path))
