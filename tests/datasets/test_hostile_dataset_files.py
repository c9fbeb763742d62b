"""Dataset files a user names are read within a memory bound, never block, and
every refusal names the file: an npz member that declares or inflates past the
dataset's budget, an object array repeating one list, a cifar pickle past its
budget, a path that is a FIFO or a link to /dev/zero, a word index that is not
UTF-8 or nests 100,000 deep."""

from __future__ import annotations

import io
import os
import pickle
import struct
import tarfile
import zipfile

import numpy as np
import pytest

import loopax
from loopax.src.datasets import cifar, dataset_files, imdb


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def test_an_npz_member_inflating_past_the_budget_is_refused(tmp_path):
    """x_train deflates from 4 MB of zeros to 70 MB: over mnist's 64 MiB."""
    path = tmp_path / "mnist.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("x_train.npy", _npy(np.zeros((70 * 2**20,), np.uint8)))
        for key in ("y_train", "x_test", "y_test"):
            zf.writestr(f"{key}.npy", _npy(np.zeros(1, np.uint8)))
    assert path.stat().st_size < 2**20
    with pytest.raises(ValueError, match=r"mnist.npz: entry 'x_train.npy' declares \d+ bytes"):
        loopax.datasets.mnist.load_data(str(path))


def test_an_npz_member_declaring_931_gib_is_refused_by_its_header(tmp_path):
    """A zip whose central directory declares a 1e12-byte member, stored."""
    path = tmp_path / "imdb.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x_train.npy", b"\x93NUMPY")
    data = bytearray(path.read_bytes())
    central = data.index(b"PK\x01\x02")
    data[central + 24:central + 28] = struct.pack("<I", 0xFFFFFFFE)   # uncompressed size
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"imdb.npz.*'x_train.npy'"):
        loopax.datasets.imdb.load_data(str(path))


def test_an_object_array_repeating_one_list_is_refused(tmp_path):
    shared = list(range(1000))
    x = np.empty(2000, dtype=object)
    for i in range(2000):
        x[i] = shared          # 2,000 references, pickled once: 4 kB
    path = tmp_path / "imdb.npz"
    np.savez(path, x_train=x, y_train=np.zeros(2000, int), x_test=x[:1],
             y_test=np.zeros(1, int))
    with pytest.raises(ValueError, match=r"imdb.npz \(entry 'x_train.npy'\) holds more word "
                                         "indices"):
        loopax.datasets.imdb.load_data(str(path))


def test_a_pickle_past_its_budget_is_refused():
    data = pickle.dumps([b"x" * 1000] * 3, protocol=4)
    assert dataset_files.ArrayUnpickler(io.BytesIO(data), max_bytes=len(data)).load()
    with pytest.raises(ValueError, match="batch_1: its pickle goes on past 100 bytes"):
        dataset_files.ArrayUnpickler(io.BytesIO(data), max_bytes=100, where="batch_1").load()


def test_a_cifar_member_declaring_more_than_a_batch_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(cifar, "MAX_PICKLE_BYTES", 1000)
    path = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        payload = pickle.dumps({b"data": b"x" * 5000})
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_1")
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    with pytest.raises(ValueError, match=r"cifar-10-python.tar.gz \(member "
                                         r"'cifar-10-batches-py/data_batch_1'\) declares 50"):
        loopax.datasets.cifar10.load_data(str(path))


def test_a_cifar_member_that_is_a_link_is_refused(tmp_path):
    path = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_1")
        info.type, info.linkname = tarfile.SYMTYPE, "/dev/zero"
        archive.addfile(info)
    with pytest.raises(ValueError, match="not a regular file in the archive"):
        loopax.datasets.cifar10.load_data(str(path))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_dataset_path_that_is_not_a_file_is_refused_without_blocking(tmp_path, kind):
    path = tmp_path / "imdb.npz"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    with pytest.raises(ValueError, match=r"imdb.npz \(a dataset .npz\) is a"):
        loopax.datasets.imdb.load_data(str(path))
    with pytest.raises(ValueError, match=r"imdb.npz \(a word index\) is a"):
        loopax.datasets.imdb.get_word_index(str(path))


def test_word_index_errors_name_the_file(tmp_path):
    path = tmp_path / "w.json"
    path.write_bytes(b'{"caf\xe9": 1}')
    with pytest.raises(ValueError, match=r"w.json \(a word index\) is not utf-8 text"):
        imdb.get_word_index(str(path))
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"w.json \(a word index\)"):
        imdb.get_word_index(str(path))
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a JSON object"):
        imdb.get_word_index(str(path))
