"""cifar10, cifar100, fashion_mnist, imdb, reuters, boston_housing and
california_housing on small files in each real archive's layout, written here:
each loader's output compared with Keras 3.15.1's loader on the same file
(Keras's `get_file` replaced by one that returns the file and records the URL
and checksum Keras asks for, which loopax must use too). No network."""

import gzip
import io
import os
import pickle
import tarfile

import numpy as np
import pytest

import loopax
from loopax.src.datasets import cifar10, cifar100, fashion_mnist, housing, imdb, reuters
from loopax.src.utils import file_utils


@pytest.fixture(scope="module")
def keras():
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "jax":
        pytest.skip("Keras must use the JAX backend")
    return keras


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """LOOPAX_HOME in tmp_path; any download fails the test."""
    monkeypatch.setenv("LOOPAX_HOME", str(tmp_path / "home"))

    def refuse(url, destination):
        raise AssertionError(f"the test tried to download {url}")
    monkeypatch.setattr(file_utils, "_urlretrieve", refuse)


def keras_reading(monkeypatch, module, files):
    """Makes `module`'s get_file (a Keras dataset module) return `files[fname]`;
    returns the list of (fname, origin, file_hash) Keras asked for."""
    asked = []

    def fake_get_file(fname=None, origin=None, file_hash=None, **kwargs):
        asked.append((fname, origin, file_hash))
        return str(files[fname])
    monkeypatch.setattr(module, "get_file", fake_get_file)
    return asked


def assert_same_sequences(ours, theirs):
    assert len(ours) == len(theirs)
    assert [list(s) for s in ours] == [list(s) for s in theirs]


# ---------------------------------------------------------------- imdb / reuters


def ragged(rng, n, vocabulary=30):
    out = np.empty(n, dtype=object)
    out[:] = [list(rng.integers(1, vocabulary, rng.integers(2, 12))) for _ in range(n)]
    out[:] = [[int(w) for w in seq] for seq in out]
    return out


def write_imdb(path, seed=0):
    rng = np.random.default_rng(seed)
    np.savez(path, x_train=ragged(rng, 20), y_train=rng.integers(0, 2, 20),
             x_test=ragged(rng, 15), y_test=rng.integers(0, 2, 15))


SEQUENCE_OPTIONS = [
    dict(),
    dict(num_words=10, skip_top=4),
    dict(maxlen=8),
    dict(start_char=None, index_from=0),
    dict(start_char=None, index_from=2, num_words=12),
    dict(oov_char=None, num_words=9, skip_top=2),
    dict(seed=7, maxlen=10, num_words=15),
]
SEQUENCE_IDS = ["defaults", "num_words-skip_top", "maxlen", "no-start-no-shift",
                "no-start-shift-2", "oov-removed", "seed-maxlen-num_words"]


@pytest.mark.parametrize("options", SEQUENCE_OPTIONS, ids=SEQUENCE_IDS)
def test_imdb_matches_keras(tmp_path, monkeypatch, keras, no_network, options):
    import keras.src.datasets.imdb as keras_imdb

    write_imdb(tmp_path / "imdb.npz")
    asked = keras_reading(monkeypatch, keras_imdb, {"imdb.npz": tmp_path / "imdb.npz"})
    (kx, ky), (kxt, kyt) = keras.datasets.imdb.load_data(**options)
    (x, y), (xt, yt) = loopax.datasets.imdb.load_data(str(tmp_path / "imdb.npz"), **options)
    assert_same_sequences(x, kx)
    assert_same_sequences(xt, kxt)
    np.testing.assert_array_equal(y, ky)
    np.testing.assert_array_equal(yt, kyt)
    assert asked == [("imdb.npz", imdb.ORIGIN_FOLDER + "imdb.npz", imdb.SHA256)]


def test_imdb_maxlen_that_keeps_nothing_raises(tmp_path, no_network):
    write_imdb(tmp_path / "imdb.npz")
    with pytest.warns(UserWarning, match=r"ignores the arguments \['nb_words'\]"):
        loopax.datasets.imdb.load_data(str(tmp_path / "imdb.npz"), nb_words=5)   # Keras runs it
    with pytest.raises(ValueError, match="maxlen=2"):
        loopax.datasets.imdb.load_data(str(tmp_path / "imdb.npz"), maxlen=2)


@pytest.mark.parametrize("options", SEQUENCE_OPTIONS + [dict(test_split=0.5)],
                         ids=SEQUENCE_IDS + ["test_split-0.5"])
def test_reuters_matches_keras(tmp_path, monkeypatch, keras, no_network, options):
    import keras.src.datasets.reuters as keras_reuters

    rng = np.random.default_rng(1)
    np.savez(tmp_path / "r.npz", x=ragged(rng, 25), y=rng.integers(0, 46, 25))
    asked = keras_reading(monkeypatch, keras_reuters, {"reuters.npz": tmp_path / "r.npz"})
    (kx, ky), (kxt, kyt) = keras.datasets.reuters.load_data(**options)
    (x, y), (xt, yt) = loopax.datasets.reuters.load_data(str(tmp_path / "r.npz"), **options)
    assert_same_sequences(x, kx)
    assert_same_sequences(xt, kxt)
    np.testing.assert_array_equal(y, ky)
    np.testing.assert_array_equal(yt, kyt)
    assert asked == [("reuters.npz", reuters.ORIGIN_FOLDER + "reuters.npz", reuters.SHA256)]
    assert loopax.datasets.reuters.get_label_names() == keras.datasets.reuters.get_label_names()


@pytest.mark.parametrize("name", ["imdb", "reuters"])
def test_word_index_matches_keras(tmp_path, monkeypatch, keras, no_network, name):
    import importlib

    keras_module = importlib.import_module(f"keras.src.datasets.{name}")
    (tmp_path / "w.json").write_text('{"the": 1, "and": 2, "film": 17}')
    asked = keras_reading(monkeypatch, keras_module,
                          {f"{name}_word_index.json": tmp_path / "w.json"})
    ours = getattr(loopax.datasets, name).get_word_index(str(tmp_path / "w.json"))
    assert ours == getattr(keras.datasets, name).get_word_index() == {"the": 1, "and": 2,
                                                                      "film": 17}
    module = {"imdb": imdb, "reuters": reuters}[name]
    assert asked == [(f"{name}_word_index.json",
                      f"{module.ORIGIN_FOLDER}{name}_word_index.json", module.WORD_INDEX_MD5)]


def test_a_pickle_that_runs_code_is_refused(tmp_path, no_network):
    class Exploit:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    payload = np.empty(1, dtype=object)
    payload[0] = Exploit()
    np.savez(tmp_path / "bad.npz", x_train=payload, y_train=np.zeros(1), x_test=payload,
             y_test=np.zeros(1))
    with pytest.raises(pickle.UnpicklingError, match="system"):
        loopax.datasets.imdb.load_data(str(tmp_path / "bad.npz"))


# ---------------------------------------------------------------- cifar


def cifar_batch(rng, n, label_keys):
    batch = {b"batch_label": b"testing", b"data": rng.integers(0, 256, (n, 3072),
                                                                 dtype=np.uint8),
             b"filenames": [f"img_{i}.png".encode() for i in range(n)]}
    for key, classes in label_keys.items():
        batch[key.encode()] = [int(v) for v in rng.integers(0, classes, n)]
    return batch


def write_tar(path, folder, batches):
    """A .tar.gz holding `folder/name` pickles (bytes keys, as the real archives;
    protocol 3 pickles bytes natively, as Python 2 pickled its str)."""
    with tarfile.open(path, "w:gz") as archive:
        for name, batch in batches.items():
            data = pickle.dumps(batch, protocol=3)
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_cifar10_batches_match_keras_load_batch(tmp_path, keras, no_network):
    from keras.src.datasets.cifar import load_batch

    rng = np.random.default_rng(0)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    batches = {name: cifar_batch(rng, 3 + i, {"labels": 10}) for i, name in enumerate(names)}
    write_tar(tmp_path / "c10.tar.gz", "cifar-10-batches-py", batches)
    with tarfile.open(tmp_path / "c10.tar.gz") as archive:
        archive.extractall(tmp_path / "extracted", filter="data")
    # Keras's cifar10.load_data assumes 10,000 images per batch; its load_batch
    # (what it stacks) is compared batch by batch.
    folder = tmp_path / "extracted" / "cifar-10-batches-py"
    keras_parts = [load_batch(str(folder / name)) for name in names]
    want_x = np.concatenate([x for x, _ in keras_parts[:5]]).transpose(0, 2, 3, 1)
    want_y = np.concatenate([y for _, y in keras_parts[:5]]).reshape(-1, 1)
    for source in (tmp_path / "c10.tar.gz", folder):
        (x, y), (xt, yt) = loopax.datasets.cifar10.load_data(str(source))
        np.testing.assert_array_equal(x, want_x)
        np.testing.assert_array_equal(y, want_y)
        np.testing.assert_array_equal(xt, keras_parts[5][0].transpose(0, 2, 3, 1))
        assert x.dtype == y.dtype == xt.dtype == yt.dtype == np.uint8 and yt.shape == (8, 1)
    loopax.config.set_image_data_format("channels_first")
    (x, _), _ = loopax.datasets.cifar10.load_data(str(tmp_path / "c10.tar.gz"))
    assert x.shape == (25, 3, 32, 32)


@pytest.mark.parametrize("label_mode", ["fine", "coarse"])
def test_cifar100_matches_keras(tmp_path, monkeypatch, keras, no_network, label_mode):
    import keras.src.datasets.cifar100 as keras_cifar100

    rng = np.random.default_rng(1)
    batches = {name: cifar_batch(rng, n, {"fine_labels": 100, "coarse_labels": 20})
               for name, n in (("train", 6), ("test", 4))}
    write_tar(tmp_path / "c100.tar.gz", "cifar-100-python", batches)
    with tarfile.open(tmp_path / "c100.tar.gz") as archive:
        archive.extractall(tmp_path / "extracted", filter="data")
    asked = keras_reading(monkeypatch, keras_cifar100,
                          {"cifar-100-python-target": tmp_path / "extracted"})
    (kx, ky), (kxt, kyt) = keras.datasets.cifar100.load_data(label_mode)
    (x, y), (xt, yt) = loopax.datasets.cifar100.load_data(label_mode,
                                                          path=str(tmp_path / "c100.tar.gz"))
    for ours, theirs in ((x, kx), (y, ky), (xt, kxt), (yt, kyt)):
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    assert asked[0][1:] == (cifar100.ORIGIN, cifar100.SHA256)
    with pytest.raises(ValueError, match="label_mode"):
        loopax.datasets.cifar100.load_data("medium")


def test_cifar10_url_and_checksum_are_keras(monkeypatch, keras):
    import keras.src.datasets.cifar10 as keras_cifar10

    asked = keras_reading(monkeypatch, keras_cifar10, {})
    with pytest.raises(KeyError):
        keras.datasets.cifar10.load_data()
    assert asked[0][1:] == (cifar10.ORIGIN, cifar10.SHA256)


# ---------------------------------------------------------------- fashion_mnist


def write_idx(path, array, header_bytes):
    with gzip.open(path, "wb") as f:
        f.write(b"\0" * header_bytes + array.astype(np.uint8).tobytes())


def test_fashion_mnist_matches_keras(tmp_path, monkeypatch, keras, no_network):
    import keras.src.datasets.fashion_mnist as keras_fashion

    rng = np.random.default_rng(2)
    arrays = {"train-labels-idx1-ubyte.gz": (rng.integers(0, 10, 5), 8),
              "train-images-idx3-ubyte.gz": (rng.integers(0, 256, (5, 28, 28)), 16),
              "t10k-labels-idx1-ubyte.gz": (rng.integers(0, 10, 3), 8),
              "t10k-images-idx3-ubyte.gz": (rng.integers(0, 256, (3, 28, 28)), 16)}
    for name, (array, header) in arrays.items():
        write_idx(tmp_path / name, array, header)
    asked = keras_reading(monkeypatch, keras_fashion,
                          {name: tmp_path / name for name in arrays})
    (kx, ky), (kxt, kyt) = keras.datasets.fashion_mnist.load_data()
    (x, y), (xt, yt) = loopax.datasets.fashion_mnist.load_data(str(tmp_path))
    for ours, theirs in ((x, kx), (y, ky), (xt, kxt), (yt, kyt)):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    assert [a[1] for a in asked] == [fashion_mnist.ORIGIN_FOLDER + n for n in fashion_mnist.FILES]
    with pytest.raises(FileNotFoundError, match="lacks"):
        os.remove(tmp_path / "t10k-labels-idx1-ubyte.gz")
        loopax.datasets.fashion_mnist.load_data(str(tmp_path))


# ---------------------------------------------------------------- housing


@pytest.mark.parametrize("name,options", [
    ("boston_housing", dict()), ("boston_housing", dict(test_split=0.3, seed=5)),
    ("boston_housing", dict(test_split=0.0)),
    ("california_housing", dict()), ("california_housing", dict(version="small", seed=1))],
    ids=["boston-defaults", "boston-split-seed", "boston-no-test", "california-large",
         "california-small"])
def test_housing_matches_keras(tmp_path, monkeypatch, keras, no_network, name, options):
    import importlib

    keras_module = importlib.import_module(f"keras.src.datasets.{name}")
    rng = np.random.default_rng(3)
    n = 650 if name == "california_housing" else 41
    np.savez(tmp_path / "h.npz", x=rng.normal(size=(n, 4)), y=rng.normal(size=n))
    asked = keras_reading(monkeypatch, keras_module, {f"{name}.npz": tmp_path / "h.npz"})
    (kx, ky), (kxt, kyt) = getattr(keras.datasets, name).load_data(**options)
    (x, y), (xt, yt) = getattr(loopax.datasets, name).load_data(path=str(tmp_path / "h.npz"),
                                                                **options)
    for ours, theirs in ((x, kx), (y, ky), (xt, kxt), (yt, kyt)):
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    sha = housing.BOSTON_SHA256 if name == "boston_housing" else housing.CALIFORNIA_SHA256
    assert asked == [(f"{name}.npz", f"{housing.ORIGIN_FOLDER}{name}.npz", sha)]
    with pytest.raises(ValueError, match="test_split"):
        getattr(loopax.datasets, name).load_data(path=str(tmp_path / "h.npz"), test_split=1.0)


# ---------------------------------------------------------------- the cache


def test_downloads_go_to_the_cache_once_and_are_checksum_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPAX_HOME", str(tmp_path / "home"))
    write_imdb(tmp_path / "source.npz")
    calls = []

    def fake_download(url, destination):
        calls.append(url)
        with open(tmp_path / "source.npz", "rb") as src, open(destination, "wb") as dst:
            dst.write(src.read())
    monkeypatch.setattr(file_utils, "_urlretrieve", fake_download)
    with pytest.raises(ValueError, match="sha256"):   # not the published file
        loopax.datasets.imdb.load_data()
    assert not list((tmp_path / "home" / "datasets").iterdir())
    monkeypatch.setattr(imdb, "SHA256", file_utils.sha256_of(tmp_path / "source.npz"))
    (x, _), _ = loopax.datasets.imdb.load_data()
    loopax.datasets.imdb.load_data()
    assert calls == [imdb.ORIGIN_FOLDER + "imdb.npz"] * 2    # the second load: from the cache
    assert (tmp_path / "home" / "datasets" / "imdb.npz").exists() and len(x) == 20
    with pytest.raises(FileNotFoundError, match="No file at"):
        loopax.datasets.imdb.load_data(str(tmp_path / "nowhere" / "imdb.npz"))
    # A bare name is the cache's (as in Keras), even when the working directory has one.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "imdb.npz").write_bytes(b"not the dataset")
    (x, _), _ = loopax.datasets.imdb.load_data("imdb.npz")
    assert len(x) == 20 and len(calls) == 2
