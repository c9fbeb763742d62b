"""The 8×8 handwritten digits shipped with loopax (1,797 images, 10 classes).

From the UCI *Optical Recognition of Handwritten Digits* set, via
scikit-learn; see `data/README.md` for origin and license.
"""

from __future__ import annotations

import importlib.resources

import numpy as np


def _read():
    path = importlib.resources.files("loopax.src.datasets") / "data" / "digits.npz"
    with path.open("rb") as f, np.load(f, allow_pickle=False) as data:
        return data["images"], data["labels"]


def load_data(test_split=0.2, seed=113):
    """Loads the digits, shuffled with `seed` and split.

    Args:
        test_split: fraction of the 1,797 images held out for testing.
        seed: shuffling seed (None keeps the file's order).

    Returns:
        `(x_train, y_train), (x_test, y_test)`: x uint8 of shape `(n, 8, 8)`
        with values 0..16, y uint8 labels 0..9.
    """
    if not 0 <= test_split < 1:
        raise ValueError(f"test_split must be in [0, 1), got {test_split}.")
    images, labels = _read()
    if seed is not None:
        order = np.random.default_rng(seed).permutation(len(labels))
        images, labels = images[order], labels[order]
    n_test = int(round(len(labels) * test_split))
    n_train = len(labels) - n_test
    return (images[:n_train], labels[:n_train]), (images[n_train:], labels[n_train:])
