"""MNIST: 60,000 training and 10,000 test images of 28×28 handwritten digits.

Downloaded once from the URL Keras uses and cached under
`$LOOPAX_HOME/datasets` (default `~/.loopax/datasets`), its sha256 checked
against the one Keras publishes.
"""

from __future__ import annotations

from loopax.src.datasets import dataset_files

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
_KEYS = ("x_train", "y_train", "x_test", "y_test")


def load_data(path=None):
    """Loads MNIST.

    Args:
        path: a local `.npz` file with arrays `x_train, y_train, x_test,
            y_test`, named with a directory part (`"./mnist.npz"`), read as is;
            or a bare file name in the cache (default "mnist.npz"), downloaded
            if missing and checksum-checked.

    Returns:
        `(x_train, y_train), (x_test, y_test)`: uint8 images `(n, 28, 28)`
        and uint8 labels `(n,)`.
    """
    file = dataset_files.dataset_path(path, "mnist.npz", ORIGIN, SHA256)
    arrays = dataset_files.load_npz(file, _KEYS, 64 * 2**20)   # the real x_train: 47 MB
    return (arrays["x_train"], arrays["y_train"]), (arrays["x_test"], arrays["y_test"])
