"""CIFAR-10 and CIFAR-100: 32×32 colour images in the python-pickle archives
Keras downloads (`cifar-10-python.tar.gz`, `cifar-100-python.tar.gz`), read
straight from the `.tar.gz` (or from an extracted directory) with a
pickle reader that only builds NumPy arrays."""

from __future__ import annotations

import os
import pickle
import struct
import tarfile
import zlib

import numpy as np

from loopax.src.config import image_data_format
from loopax.src.datasets import dataset_files
from loopax.src.utils import safe_open


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


# The largest pickle of the real archives: CIFAR-100's train batch, 50,000
# images of 3,072 bytes plus labels and file names (a few MB).
MAX_PICKLE_BYTES = 50_000 * 3072 + 16 * 2**20
# The most bytes of a `.tar.gz` decompressed while looking for a member (the real
# archives: about 180 MB).
MAX_TAR_BYTES = 1 * 2**30


def _unpickle(archive_path, member):
    if os.path.isdir(archive_path):
        candidates = [os.path.join(archive_path, member),
                      os.path.join(archive_path, os.path.basename(member))]
        for candidate in candidates:
            if os.path.exists(candidate):
                with safe_open.open_regular(candidate, "a CIFAR batch") as f:
                    return _load_pickle(f, candidate)
        raise FileNotFoundError(f"{archive_path} has no {member} (looked for {candidates}).")
    where = f"{archive_path} (member {member!r})"
    with safe_open.open_regular(archive_path, "a CIFAR archive") as f:
        try:
            with tarfile.open(fileobj=f, mode="r|gz") as archive:
                for info in archive:
                    if info.offset_data + info.size > MAX_TAR_BYTES:
                        raise ValueError(
                            f"{archive_path} goes on past {MAX_TAR_BYTES} bytes before "
                            f"{member!r}; refused (the real archive is about 180 MB): "
                            "delete it and download it again.")
                    if info.name != member:
                        continue
                    if not info.isfile():
                        raise ValueError(f"{where} is not a regular file in the archive; "
                                         "delete it and download it again.")
                    if info.size > MAX_PICKLE_BYTES:
                        raise ValueError(
                            f"{where} declares {info.size} bytes, more than a CIFAR batch "
                            f"holds ({MAX_PICKLE_BYTES}); refused: delete it and download "
                            "it again.")
                    return _load_pickle(archive.extractfile(info), where)
        except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
            raise ValueError(f"{archive_path} is not a readable .tar.gz ({type(e).__name__}: "
                             f"{str(e)[:200]}); delete it and download it again.") from None
    raise ValueError(f"{archive_path} has no member {member!r}: is it the right archive?")


def _load_pickle(stream, where):
    try:
        return dataset_files.ArrayUnpickler(stream, encoding="bytes", max_bytes=MAX_PICKLE_BYTES,
                                            where=where).load()
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(f"{where}: {e}") from None
    except (EOFError, TypeError, KeyError, AttributeError,
            IndexError, struct.error, UnicodeDecodeError) as e:
        raise ValueError(f"{where} is not a CIFAR batch loopax can read "
                         f"({type(e).__name__}: {str(e)[:200]}); delete it and download it "
                         "again.") from None


def as_image_data_format(x):
    """`(n, 3, 32, 32)` images in the configured data format."""
    return x.transpose(0, 2, 3, 1) if image_data_format() == "channels_last" else x
