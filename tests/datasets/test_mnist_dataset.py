"""mnist.load_data: local files, the cache and the checksum, without the network."""

import hashlib

import numpy as np
import pytest

import loopax
from loopax.src.datasets import mnist
from loopax.src.utils import file_utils


def write_npz(path, n=3):
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 255, (n, 28, 28), dtype=np.uint8),
              "y_train": rng.integers(0, 10, n, dtype=np.uint8),
              "x_test": rng.integers(0, 255, (2, 28, 28), dtype=np.uint8),
              "y_test": rng.integers(0, 10, 2, dtype=np.uint8)}
    with open(path, "wb") as f:   # (a file object: numpy adds no ".npz" suffix)
        np.savez_compressed(f, **arrays)
    return arrays


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """LOOPAX_HOME in tmp_path and a fake downloader that records its calls."""
    monkeypatch.setenv("LOOPAX_HOME", str(tmp_path / "home"))
    calls = []

    def fake_download(url, destination):
        calls.append(url)
        write_npz(destination)
    monkeypatch.setattr(file_utils, "_urlretrieve", fake_download)
    return calls


def test_local_file_is_read_as_is(tmp_path, no_network):
    arrays = write_npz(tmp_path / "small.npz")
    (x_train, y_train), (x_test, y_test) = loopax.datasets.mnist.load_data(
        str(tmp_path / "small.npz")
    )
    np.testing.assert_array_equal(x_train, arrays["x_train"])
    np.testing.assert_array_equal(y_test, arrays["y_test"])
    assert no_network == []
    np.savez(tmp_path / "bad.npz", x_train=arrays["x_train"])
    with pytest.raises(ValueError, match=r"lacks the member\(s\) \['y_train.npy', 'x_test.npy', "
                                         r"'y_test.npy'\]"):
        loopax.datasets.mnist.load_data(str(tmp_path / "bad.npz"))
    with pytest.raises(FileNotFoundError):
        loopax.datasets.mnist.load_data(str(tmp_path / "missing" / "mnist.npz"))


def test_download_with_a_wrong_checksum_is_deleted_and_raises(tmp_path, no_network):
    with pytest.raises(ValueError, match="sha256"):
        loopax.datasets.mnist.load_data()
    assert no_network == [mnist.ORIGIN]
    cache = tmp_path / "home" / "datasets"
    assert list(cache.iterdir()) == []   # nothing left behind


def test_download_with_the_right_checksum_is_cached(tmp_path, no_network, monkeypatch):
    write_npz(tmp_path / "expected.npz")
    digest = hashlib.sha256((tmp_path / "expected.npz").read_bytes()).hexdigest()
    monkeypatch.setattr(mnist, "SHA256", digest)
    (x_train, _), _ = loopax.datasets.mnist.load_data()
    assert x_train.shape == (3, 28, 28)
    assert (tmp_path / "home" / "datasets" / "mnist.npz").exists()
    loopax.datasets.mnist.load_data()
    assert no_network == [mnist.ORIGIN]   # the second load used the cache
    # A corrupted cached file is fetched again.
    (tmp_path / "home" / "datasets" / "mnist.npz").write_bytes(b"garbage")
    loopax.datasets.mnist.load_data()
    assert len(no_network) == 2


def test_published_checksum():
    assert mnist.SHA256 == "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
    assert mnist.ORIGIN == "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
