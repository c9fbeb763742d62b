"""MNIST: 60,000 training and 10,000 test images of 28×28 handwritten digits.

Downloaded once from the URL Keras uses and cached under
`$LOOPAX_HOME/datasets` (default `~/.loopax/datasets`), its sha256 checked
against the one Keras publishes.
"""

from __future__ import annotations

import os

import numpy as np

from loopax.src.utils import file_utils

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
_KEYS = ("x_train", "y_train", "x_test", "y_test")


def load_data(path=None):
    """Loads MNIST.

    Args:
        path: an existing local `.npz` file with arrays `x_train, y_train,
            x_test, y_test` (read as is); or a file name in the cache
            (default "mnist.npz"), downloaded if missing and checksum-checked.

    Returns:
        `(x_train, y_train), (x_test, y_test)`: uint8 images `(n, 28, 28)`
        and uint8 labels `(n,)`.
    """
    if path is not None and os.path.exists(os.path.expanduser(path)):
        file = os.path.expanduser(path)
    elif path is not None and os.path.dirname(path):
        raise FileNotFoundError(
            f"No file at {path!r}. Pass an existing .npz file, a bare file name to "
            "use in the cache, or None to download MNIST.")
    else:
        file = file_utils.get_file(path or "mnist.npz", origin=ORIGIN, file_hash=SHA256)
    with np.load(file, allow_pickle=False) as data:
        missing = [k for k in _KEYS if k not in data.files]
        if missing:
            raise ValueError(f"{file} lacks arrays {missing}; an MNIST .npz holds "
                             f"{list(_KEYS)} (it has {data.files}).")
        x_train, y_train, x_test, y_test = (data[k] for k in _KEYS)
    return (x_train, y_train), (x_test, y_test)
