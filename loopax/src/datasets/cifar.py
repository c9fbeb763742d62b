"""CIFAR-10 and CIFAR-100: 32×32 colour images in the python-pickle archives
Keras downloads (`cifar-10-python.tar.gz`, `cifar-100-python.tar.gz`), read
straight from the `.tar.gz` (or from an extracted directory) with a
pickle reader that only builds NumPy arrays."""

from __future__ import annotations

import os
import tarfile

import numpy as np

from loopax.src.config import image_data_format
from loopax.src.datasets import dataset_files


def read_batches(archive_path, folder, names, label_key):
    """`(images (n, 3, 32, 32) uint8, labels (n,))` of the pickled batches
    `folder/name` in a `.tar.gz` or under an extracted directory."""
    images, labels = [], []
    for name in names:
        batch = _unpickle(archive_path, f"{folder}/{name}")
        if b"data" not in batch or label_key.encode() not in batch:
            raise ValueError(f"{archive_path}: {folder}/{name} has no 'data' or '{label_key}' "
                             f"entry (it has {sorted(k.decode() for k in batch)}).")
        data = np.asarray(batch[b"data"], dtype="uint8")
        images.append(data.reshape(len(data), 3, 32, 32))
        labels.append(np.asarray(batch[label_key.encode()]))
    return np.concatenate(images), np.concatenate(labels)


def _unpickle(archive_path, member):
    if os.path.isdir(archive_path):
        candidates = [os.path.join(archive_path, member),
                      os.path.join(archive_path, os.path.basename(member))]
        for candidate in candidates:
            if os.path.exists(candidate):
                with open(candidate, "rb") as f:
                    return dataset_files.ArrayUnpickler(f, encoding="bytes").load()
        raise FileNotFoundError(f"{archive_path} has no {member} (looked for {candidates}).")
    with tarfile.open(archive_path, "r:gz") as archive:
        try:
            stream = archive.extractfile(member)
        except KeyError:
            raise ValueError(f"{archive_path} has no member {member!r}: is it the right "
                             "archive?") from None
        return dataset_files.ArrayUnpickler(stream, encoding="bytes").load()


def as_image_data_format(x):
    """`(n, 3, 32, 32)` images in the configured data format."""
    return x.transpose(0, 2, 3, 1) if image_data_format() == "channels_last" else x
