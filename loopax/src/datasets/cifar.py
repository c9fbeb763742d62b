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


def read_batches(archive_path: str, folder: str, names: list[str],
                 label_key: str) -> tuple[np.ndarray, np.ndarray]:
    """`(images (n, 3, 32, 32) uint8, labels (n,))` of the pickled batches
    `folder/name` in a `.tar.gz` or under an extracted directory."""
    images, labels = [], []
    for name in names:
        where = f"{archive_path}: {folder}/{name}"
        data, batch_labels = _checked_batch(_unpickle(archive_path, f"{folder}/{name}"),
                                            label_key, where)
        images.append(data.reshape(len(data), 3, 32, 32))
        labels.append(batch_labels)
    return np.concatenate(images), np.concatenate(labels)


def _checked_batch(batch, label_key, where):
    """A batch's `(data, labels)`, refused unless `data` is a uint8 array
    `(n, 3072)` and the labels `n` ints (a list or an integer array), as in the
    real archives: rows that are lists, or labels that repeat one list, would
    expand a small pickle many times over."""
    if not isinstance(batch, dict):
        raise ValueError(f"{where} is a pickled {type(batch).__name__}, not the dict a CIFAR "
                         "batch is; delete the archive and download it again.")
    if b"data" not in batch or label_key.encode() not in batch:
        raise ValueError(f"{where} has no 'data' or '{label_key}' entry (it has "
                         f"{sorted(str(k)[:40] for k in batch)[:20]}).")
    data, labels = batch[b"data"], batch[label_key.encode()]
    if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 2
            and data.shape[1] == 3 * 32 * 32):
        found = (f"a {data.dtype} array of shape {data.shape}" if isinstance(data, np.ndarray)
                 else f"a {type(data).__name__}")
        raise ValueError(f"{where}: 'data' is {found}; a CIFAR batch holds a uint8 array "
                         "(images, 3072). Delete the archive and download it again.")
    if isinstance(labels, np.ndarray):
        valid = labels.ndim == 1 and labels.dtype.kind in "iu"
    else:
        valid = isinstance(labels, list) and all(type(v) is int for v in labels)
    if not valid or len(labels) != len(data):
        raise ValueError(f"{where}: {label_key!r} is not {len(data)} int labels (one per "
                         "image of 'data'); delete the archive and download it again.")
    return data, np.asarray(labels)


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
