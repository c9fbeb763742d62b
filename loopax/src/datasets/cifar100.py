"""CIFAR-100: 50,000 training and 10,000 test 32×32 colour images of 100
classes (20 coarse superclasses)."""

from __future__ import annotations

import numpy as np

from loopax.src.datasets import cifar, dataset_files

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
SHA256 = "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"
FOLDER = "cifar-100-python"


def load_data(label_mode="fine", path=None):
    """Loads CIFAR-100 as `keras.datasets.cifar100.load_data` does.

    Args:
        label_mode: "fine" (100 classes) or "coarse" (20 superclasses).
        path: (loopax's addition) an existing local `cifar-100-python.tar.gz`
            or its extracted `cifar-100-python` directory; None downloads the
            archive once into the cache (checksum-checked).

    Returns:
        `(x_train, y_train), (x_test, y_test)`: uint8 images `(n, 32, 32, 3)`
        (`(n, 3, 32, 32)` with channels_first) and int labels `(n, 1)`.
    """
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f'`label_mode` must be "fine" or "coarse". Received: '
                         f"label_mode={label_mode!r}")
    file = dataset_files.dataset_path(path, "cifar-100-python.tar.gz", ORIGIN, SHA256)
    key = f"{label_mode}_labels"
    x_train, y_train = cifar.read_batches(file, FOLDER, ["train"], key)
    x_test, y_test = cifar.read_batches(file, FOLDER, ["test"], key)
    return ((cifar.as_image_data_format(x_train), np.reshape(y_train, (-1, 1))),
            (cifar.as_image_data_format(x_test), np.reshape(y_test, (-1, 1))))
