"""Stand-in for tfds.load('tf_flowers', ...) (a download): synthetic uint8
images and int64 labels as a Dataset of the backend under test (TT_TF_MODULE)."""

import importlib
import os

import numpy as np


class _Label:
    names = ["dandelion", "daisy", "tulips", "sunflowers", "roses"]
    num_classes = 5

    def int2str(self, i):
        return self.names[int(np.asarray(i))]


class _Info:
    features = {"label": _Label()}


def load(name, split=None, with_info=False, as_supervised=False, **kwargs):
    tf = importlib.import_module(os.environ["TT_TF_MODULE"])
    rng = np.random.default_rng(0)
    sizes = [48, 6, 6] if isinstance(split, (list, tuple)) else [60]
    out = []
    for n in sizes:
        x = rng.integers(0, 256, size=(n, 64, 64, 3), dtype=np.uint8)
        y = rng.integers(0, 5, size=(n,)).astype(np.int64)
        ds = tf.data.Dataset.from_tensor_slices(
            (x, y) if as_supervised else {"image": x, "label": y}
        )
        out.append(ds)
    result = out if isinstance(split, (list, tuple)) else out[0]
    return (result, _Info()) if with_info else result
