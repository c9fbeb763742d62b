"""Fashion-MNIST: 60,000 training and 10,000 test 28×28 grayscale images of
10 kinds of clothing, in the gzipped IDX files Keras downloads."""

from __future__ import annotations

import gzip
import os
import zlib

import numpy as np

from loopax.src.datasets import dataset_files
from loopax.src.utils import safe_open

ORIGIN_FOLDER = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
         "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")
# Keras publishes no checksums for these four files: they are not checked.


def load_data(path=None):
    """Loads Fashion-MNIST as `keras.datasets.fashion_mnist.load_data` does.

    Args:
        path: (loopax's addition) an existing local directory holding the four
            `.gz` files; None downloads them once into
            `$LOOPAX_HOME/datasets/fashion-mnist`.

    Returns:
        `(x_train, y_train), (x_test, y_test)`: uint8 images `(n, 28, 28)` and
        uint8 labels `(n,)`.
    """
    if path is not None:
        path = os.path.expanduser(str(path))
        if not os.path.isdir(path):
            raise FileNotFoundError(f"{path!r} is not a directory: pass the directory holding "
                                    f"{list(FILES)}, or None to download them.")
        files = [os.path.join(path, name) for name in FILES]
        missing = [f for f in files if not os.path.exists(f)]
        if missing:
            raise FileNotFoundError(f"{path!r} lacks {missing}.")
    else:
        files = [dataset_files.dataset_path(None, name, ORIGIN_FOLDER + name, None,
                                            cache_subdir=os.path.join("datasets",
                                                                      "fashion-mnist"))
                 for name in FILES]
    y_train, x_train, y_test, x_test = (_read_idx(f, offset) for f, offset in
                                        zip(files, (8, 16, 8, 16)))
    return ((_as_images(x_train, y_train, files[1], files[0]), y_train),
            (_as_images(x_test, y_test, files[3], files[2]), y_test))


def _as_images(pixels, labels, images_file, labels_file):
    """`pixels` as `(len(labels), 28, 28)`, as Keras reshapes them, or an error
    naming both files."""
    if len(pixels) != len(labels) * 28 * 28:
        raise ValueError(f"{images_file} holds {len(pixels)} bytes of pixels after its header, "
                         f"not {len(labels)} images of 28 x 28 (one per label of {labels_file}); "
                         "delete the files and download them again.")
    return pixels.reshape(len(labels), 28, 28)


# The largest real file, train-images: 60,000 images of 784 bytes and a header.
MAX_IDX_BYTES = 60_000 * 784 + 16


def _read_idx(path, header_bytes):
    with safe_open.open_regular(path, "a Fashion-MNIST file") as raw:
        try:
            with gzip.GzipFile(fileobj=raw) as f:
                data = safe_open.read_stream(f, MAX_IDX_BYTES, path, "a Fashion-MNIST file")
        except (OSError, EOFError, zlib.error) as e:
            raise ValueError(f"{path} is not a readable .gz file ({type(e).__name__}: "
                             f"{str(e)[:200]}); delete it and download it again.") from None
    if len(data) < header_bytes:
        raise ValueError(f"{path} holds {len(data)} bytes, fewer than its IDX header "
                         f"({header_bytes}); delete it and download it again.")
    return np.frombuffer(data, np.uint8, offset=header_bytes)
