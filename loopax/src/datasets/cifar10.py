"""CIFAR-10: 50,000 training and 10,000 test 32×32 colour images of 10 classes."""

from __future__ import annotations

from loopax.src.datasets import cifar, dataset_files

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
FOLDER = "cifar-10-batches-py"


def load_data(path=None):
    """Loads CIFAR-10 as `keras.datasets.cifar10.load_data` does.

    Args:
        path: (loopax's addition) an existing local `cifar-10-python.tar.gz`
            or its extracted `cifar-10-batches-py` directory; None downloads
            the archive once into the cache (checksum-checked).

    Returns:
        `(x_train, y_train), (x_test, y_test)`: uint8 images `(n, 32, 32, 3)`
        (`(n, 3, 32, 32)` with channels_first) and uint8 labels `(n, 1)`.
    """
    file = dataset_files.dataset_path(path, "cifar-10-python.tar.gz", ORIGIN, SHA256)
    train = [f"data_batch_{i}" for i in range(1, 6)]
    x_train, y_train = cifar.read_batches(file, FOLDER, train, "labels")
    x_test, y_test = cifar.read_batches(file, FOLDER, ["test_batch"], "labels")
    return ((cifar.as_image_data_format(x_train), y_train.astype("uint8").reshape(-1, 1)),
            (cifar.as_image_data_format(x_test), y_test.astype("uint8").reshape(-1, 1)))
