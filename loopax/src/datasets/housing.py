"""The Boston and California housing price regression datasets (`.npz` with
`x`, `y`), shuffled and split as Keras's loaders do."""

from __future__ import annotations

from loopax.src.datasets import dataset_files

ORIGIN_FOLDER = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
BOSTON_SHA256 = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"
CALIFORNIA_SHA256 = "1a2e3a52e0398de6463aebe6f4a8da34fb21fbb6b934cf88c3425e766f2a1a6f"


def load_boston_housing(path="boston_housing.npz", test_split=0.2, seed=113):
    """Boston housing: 506 samples of 13 features, median prices in k$.

    Args:
        path: a local `.npz` (arrays `x`, `y`) named with a directory part
            (`"./boston_housing.npz"`), or a bare file name in the cache
            (downloaded if missing).
        test_split: the fraction of the (shuffled) samples kept for testing.
        seed: the shuffle's seed.

    Returns:
        `(x_train, y_train), (x_test, y_test)`.
    """
    return _load(path, "boston_housing.npz", BOSTON_SHA256, test_split, seed)


def load_california_housing(version="large", path="california_housing.npz", test_split=0.2,
                            seed=113):
    """California housing: 20,640 samples of 8 features, median house values.

    Args:
        version: "large" (all samples) or "small" (the first 600).
        path, test_split, seed: as `boston_housing.load_data`.

    Returns:
        `(x_train, y_train), (x_test, y_test)`.
    """
    if version not in ("small", "large"):
        raise ValueError(f"`version` must be 'small' or 'large'. Received: version={version!r}")
    return _load(path, "california_housing.npz", CALIFORNIA_SHA256, test_split, seed,
                 limit=600 if version == "small" else None)


def _load(path, name, sha256, test_split, seed, limit=None):
    dataset_files.check_test_split(test_split)
    file = dataset_files.dataset_path(path, name, ORIGIN_FOLDER + name, sha256)
    arrays = dataset_files.load_npz(file, ("x", "y"), 16 * 2**20)   # the real ones: < 2 MB
    x, y = arrays["x"][:limit], arrays["y"][:limit]
    x, y = dataset_files.shuffled(seed, x, y)
    (x_train, y_train), (x_test, y_test) = dataset_files.split_at_fraction(test_split, x, y)
    return (x_train, y_train), (x_test, y_test)
