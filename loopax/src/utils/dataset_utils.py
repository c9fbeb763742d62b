"""Datasets the data utilities return, and the helpers they share.

The utilities return a `loopax.tf.data.Dataset` (an `IndexedDataset`, as Keras
returns a `tf.data.Dataset`) over a `BatchDataset`, a `PyDataset` that loads
its batches on demand: windows of a time series, files of a directory tree,
slices of arrays. Iterating gives Tensors; `fit`, `evaluate` and `predict`
read the BatchDataset itself (batches loaded in worker threads, resumable).
`index_directory` lists a directory tree the way Keras does (same file order,
labels, class names and seeded shuffle), `split_dataset` splits arrays or a dataset in two, and
`timeseries_dataset_from_array` cuts sliding windows.
"""

from __future__ import annotations

import os
import random

import numpy as np

from loopax.src.api_export import export
from loopax.src.data.dataset import Dataset
from loopax.src.data.dataset import _to_host as to_host
from loopax.src.trainers.data_adapters.py_dataset import PyDataset

LABEL_MODES = ("int", "categorical", "binary", None)


class BatchDataset(PyDataset):
    """Batches of `batch_size` samples, each batch read by `load_batch(indices)`.

    Args:
        num_samples: how many samples the dataset holds.
        load_batch: `indices (int array) -> x`, the inputs of those samples
            stacked on a first axis (or, with `batch_size=None`, of one sample).
        labels: per-sample targets (an array indexed like the samples), or None.
        batch_size: samples per batch; None yields one sample per item.
        shuffle: reshuffle the sample order at the end of every epoch, drawn
            from `seed` and the epoch number (the first epoch keeps the
            order given, which the utilities already shuffled with `seed`).
        seed: the shuffle's seed.
        class_names: the class names, in label order (None without labels).
        file_paths: the files the samples come from, in sample order.

    Iterating over the dataset (`for x, y in dataset`) or `take(n)` yields its
    batches as NumPy arrays, like iterating a `tf.data.Dataset`.
    """

    # Like a tf.data.Dataset (which Keras's utilities return), the dataset orders
    # its samples itself: fit(shuffle=True) does not reorder its batches.
    _orders_itself = True

    def __init__(self, num_samples, load_batch, labels=None, batch_size=32, shuffle=False,
                 seed=None, class_names=None, file_paths=None):
        super().__init__()
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError(f"`batch_size` must be a positive int or None, got {batch_size!r}.")
        self.num_samples = int(num_samples)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.class_names = class_names
        self.file_paths = file_paths
        self._load_batch = load_batch
        self._labels = labels
        self._order = np.arange(self.num_samples)
        self._epoch = 0

    def __len__(self):
        if self.batch_size is None:
            return self.num_samples
        return -(-self.num_samples // self.batch_size)

    def __getitem__(self, index):
        if not -len(self) <= index < len(self):
            raise IndexError(f"Batch {index} of a dataset of {len(self)} batches.")
        index %= len(self)
        if self.batch_size is None:
            return self._sample(int(self._order[index]))
        indices = self._order[index * self.batch_size:(index + 1) * self.batch_size]
        x = self._load_batch(indices)
        return x if self._labels is None else (x, _take(self._labels, indices))

    def _sample(self, i):
        x = _first(self._load_batch(np.array([i])))
        return x if self._labels is None else (x, _first(_take(self._labels, [i])))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def take(self, count):
        """The first `count` batches (all of them if `count` is -1), as an iterator."""
        stop = len(self) if count is None or count < 0 else min(count, len(self))
        return (self[i] for i in range(stop))

    def batch(self, batch_size):
        """The same samples in batches of `batch_size` (a new dataset)."""
        return self._with(batch_size=batch_size)

    def unbatch(self):
        """The same samples, one per item (a new dataset)."""
        return self._with(batch_size=None)

    def _with(self, **changes):
        args = dict(num_samples=self.num_samples, load_batch=self._load_batch,
                    labels=self._labels, batch_size=self.batch_size, shuffle=self.shuffle,
                    seed=self.seed, class_names=self.class_names, file_paths=self.file_paths)
        args.update(changes)
        dataset = BatchDataset(**args)
        dataset._order = self._order.copy()
        return dataset

    def on_epoch_end(self):
        self._epoch += 1
        if self.shuffle:
            self._order = self._order_of(self._epoch)

    def _order_of(self, epoch):
        seed = None if self.seed is None else (self.seed + epoch) % 2**32
        return np.random.RandomState(seed).permutation(self.num_samples)

    def epoch_items(self, epoch):
        """The items (batches, or samples with `batch_size=None`) of pass `epoch`,
        in its order (the first pass in the order given, each later one reshuffled
        with `seed + epoch` as `on_epoch_end` does), without changing the dataset."""
        view = self._with()
        if epoch and self.shuffle:
            view._order = self._order_of(epoch)
        return iter(view)

    def __repr__(self):
        return (f"<{type(self).__name__}: {self.num_samples} samples, batch_size="
                f"{self.batch_size}, {len(self)} batches, class_names={self.class_names}>")


class IndexedDataset(Dataset):
    """A `tf.data.Dataset` over a `BatchDataset`: what the data utilities return.

    Iterating it (and every transformation: `map`, `cache`, `shuffle`, ...) gives
    the batches as Tensors, reshuffled on each pass when the utility shuffles;
    `fit`/`evaluate`/`predict` read the BatchDataset directly. Keeps Keras's
    `class_names` and `file_paths`, and, beyond tf.data, `ds[i]` (batch `i` as
    NumPy, in the current order), `batch_size` and `num_samples`.

    Args:
        batches: The BatchDataset.
    """

    def __init__(self, batches):
        self._batches = batches
        passes = iter(range(2 ** 62))
        super().__init__(lambda: map(to_host, batches.epoch_items(next(passes))), len(batches),
                         _partial_batches=batches.batch_size is not None)
        self._batched = batches.batch_size is not None

    class_names = property(lambda self: self._batches.class_names)
    file_paths = property(lambda self: self._batches.file_paths)
    batch_size = property(lambda self: self._batches.batch_size)
    num_samples = property(lambda self: self._batches.num_samples)

    def __getitem__(self, index):
        return self._batches[index]

    def on_epoch_end(self):
        """Reshuffles the order `ds[i]` reads (as the BatchDataset's epoch end)."""
        self._batches.on_epoch_end()

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None):
        if self._batches.batch_size is None and not drop_remainder:
            return IndexedDataset(self._batches._with(batch_size=batch_size))
        return super().batch(batch_size, drop_remainder)

    batch.__doc__ = Dataset.batch.__doc__

    def unbatch(self, name=None):
        return IndexedDataset(self._batches._with(batch_size=None))

    unbatch.__doc__ = Dataset.unbatch.__doc__

    def _fit_source(self):
        return self._batches

    def __repr__(self):
        return (f"<loopax.tf.data.Dataset of {self.num_samples} samples, batch_size="
                f"{self.batch_size}, {len(self)} batches, class_names={self.class_names}>")


def as_dataset(batches):
    """The `tf.data.Dataset` the utilities return for a BatchDataset."""
    return IndexedDataset(batches)


def encode_labels(labels, label_mode, num_classes):
    """Integer class ids `(n,)` as `label_mode` asks: int32 `(n,)`, one-hot
    float32 `(n, num_classes)` ("categorical"), or float32 `(n, 1)` ("binary")."""
    labels = np.asarray(labels, dtype="int32")
    if label_mode == "categorical":
        return np.eye(num_classes, dtype="float32")[labels]
    if label_mode == "binary":
        return labels.astype("float32")[:, None]
    return labels


# ---------------------------------------------------------------- directories


def check_labels_arguments(labels, label_mode, class_names, kind):
    """Validates `labels`/`label_mode`/`class_names` as Keras does."""
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError(
                f"`labels` must be 'inferred', None, or a list/tuple of integer labels, one per "
                f"{kind} file in the directory (in alphanumeric file order). Received: "
                f"labels={labels!r}")
        if class_names:
            raise ValueError(f"`class_names` can only be passed with labels='inferred'. "
                             f"Received: labels={labels!r}, class_names={class_names!r}")
    if label_mode not in LABEL_MODES:
        raise ValueError(f'`label_mode` must be one of "int", "categorical", "binary" or None. '
                         f"Received: label_mode={label_mode!r}")


def check_validation_split_arg(validation_split, subset, shuffle, seed):
    """Validates `validation_split`/`subset` as Keras does."""
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1 (exclusive), "
                         f"received: {validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("`subset` and `validation_split` go together: pass both (e.g. "
                         "validation_split=0.2, subset='training') or neither.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f'`subset` must be "training", "validation" or "both", '
                         f"received: {subset!r}")
    if validation_split and shuffle and seed is None:
        raise ValueError("With `validation_split` and `shuffle=True`, pass a `seed` (the same "
                         "for the training and validation calls) so the two subsets do not "
                         "overlap.")


def _files_under(directory, formats, follow_links):
    """Paths relative to `directory` of its files ending in `formats` (any case),
    directories walked in sorted order and the files of each sorted. With
    `follow_links`, each directory (by device and inode) is walked once: a link
    back up the tree (a loop) or a second link to a directory adds nothing."""
    found, walked, visited = [], [], set()
    for root, dirs, files in os.walk(directory, followlinks=follow_links):
        if follow_links:
            try:
                key = _directory_key(root)
            except OSError:
                dirs[:] = []
                continue
            if key in visited:
                dirs[:] = []
                continue
            visited.add(key)
            dirs[:] = [d for d in sorted(dirs) if _unvisited(os.path.join(root, d), visited)]
        walked.append((root, files))
    for root, files in sorted(walked, key=lambda entry: entry[0]):
        for name in sorted(files):
            if name.lower().endswith(formats):
                found.append(os.path.relpath(os.path.join(root, name), directory))
    return found


def _directory_key(path):
    info = os.stat(path)
    return info.st_dev, info.st_ino


def _unvisited(path, visited):
    try:
        return _directory_key(path) not in visited
    except OSError:
        return False


def index_directory(directory, labels, formats, class_names=None, shuffle=True, seed=None,
                    follow_links=False, verbose=True):
    """Lists the files of a directory tree as Keras's dataset utilities do.

    With `labels="inferred"` each sub-directory (sorted, hidden ones skipped,
    or `class_names` in that order) is a class; its files, walked recursively
    in sorted order, get its index. Otherwise the whole tree is listed and
    `labels` (one per file) is used as given. With `shuffle`, the files and
    labels are shuffled together by `np.random.RandomState(seed)`.

    Returns:
        `(file_paths, labels, class_names)`: a list of paths, an int32 array
        (None without labels), and the class names (None without labels).
    """
    if not os.path.isdir(directory):
        raise ValueError(f"`directory` must be an existing directory; {directory!r} is not.")
    if labels == "inferred":
        subdirs = [name for name in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, name)) and not name.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(subdirs):
                raise ValueError(
                    f"`class_names` must name sub-directories of {directory!r}: expected "
                    f"{subdirs} (or a subset of it), but received class_names={class_names}")
            subdirs = list(class_names)
    else:
        if class_names is not None:
            raise ValueError("`class_names` can only be passed with labels='inferred' (with "
                             "explicit labels they are the sorted labels; with labels=None "
                             "there are none).")
        subdirs = [""]
    filenames, label_ids = [], []
    for index, subdir in enumerate(subdirs):
        for name in _files_under(os.path.join(directory, subdir), formats, follow_links):
            filenames.append(os.path.join(subdir, name) if subdir else name)
            label_ids.append(index)
    if labels == "inferred":
        labels = np.array(label_ids, dtype="int32")
        class_names = subdirs
    elif labels is not None:
        if len(labels) != len(filenames):
            raise ValueError(
                f"`labels` has {len(labels)} entries but {len(filenames)} files were found in "
                f"{directory!r}: pass one label per file, in alphanumeric file order.")
        class_names = [str(label) for label in sorted(set(labels))]
        labels = np.array(labels)
    if verbose:
        classes = "" if labels is None else f" belonging to {len(class_names)} classes"
        print(f"Found {len(filenames)} files{classes}.")
    file_paths = [os.path.join(directory, name) for name in filenames]
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(file_paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return file_paths, labels, class_names


def training_or_validation_split(samples, labels, validation_split, subset):
    """The `subset` ("training" or "validation") of `samples`/`labels`: the
    last `int(validation_split * n)` are the validation samples."""
    if not validation_split:
        return samples, labels
    num_val = int(validation_split * len(samples))
    if subset == "training":
        cut = slice(None, len(samples) - num_val)
    elif subset == "validation":
        cut = slice(len(samples) - num_val, None)
    else:
        raise ValueError(f'`subset` must be "training" or "validation", received: {subset!r}')
    print(f"Using {len(samples[cut])} files for {subset}.")
    return samples[cut], None if labels is None else labels[cut]


def datasets_from_files(directory, file_paths, labels, class_names, label_mode, subset,
                        validation_split, make_dataset, kind):
    """One dataset (or, with `subset="both"`, the training and validation pair)
    from an indexed directory; `make_dataset(paths, labels, training)` builds
    one from its files and encoded labels."""
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f'label_mode="binary" needs exactly 2 classes; found class_names='
                         f"{class_names}. Use label_mode='int' or 'categorical'.")
    encoded = None if labels is None else encode_labels(labels, label_mode, len(class_names))
    subsets = ["training", "validation"] if subset == "both" else [subset]
    datasets = []
    for part in subsets:
        paths, part_labels = training_or_validation_split(file_paths, encoded,
                                                          validation_split, part)
        if not paths:
            raise ValueError(f"No {kind} files found in directory {directory!r}"
                             f"{' for the ' + part + ' subset' if part else ''}.")
        datasets.append(make_dataset(list(paths), part_labels, part != "validation"))
    return tuple(datasets) if subset == "both" else datasets[0]


# ---------------------------------------------------------------- time series


@export(
    "loopax.utils.timeseries_dataset_from_array",
    "loopax.preprocessing.timeseries_dataset_from_array",
)
def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """Sliding windows over `data`, in batches, as `keras.utils.timeseries_dataset_from_array`.

    Window `i` starts at `p = start_index + i * sequence_stride` and holds
    `data[p], data[p + sampling_rate], …` (`sequence_length` steps); its target
    is `targets[p]`. Windows never reach `end_index` (exclusive, default
    `len(data)`).

    Args:
        data: an array `(timesteps, *features)`.
        targets: an array, `targets[p]` the target of the window starting at
            `p`; or None (windows only).
        sequence_length: steps per window.
        sequence_stride: steps between the starts of two windows.
        sampling_rate: steps between two samples of a window.
        batch_size: windows per batch (None: one window per item).
        shuffle: shuffle the windows with `seed`, and again each epoch.
        seed: the shuffle's seed.
        start_index, end_index: use only `data[start_index:end_index]`.

    Returns:
        A `loopax.tf.data.Dataset` of `x` batches `(batch, sequence_length,
        *data.shape[1:])`, or `(x, y)` with `targets` (Tensors when iterated).
    """
    n = len(data)
    _check_timeseries_args(n, sequence_stride, sampling_rate, start_index, end_index)
    start_index = start_index or 0
    end_index = n if end_index is None else end_index
    num_windows = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        num_windows = min(num_windows, len(targets))
    starts = np.arange(0, max(num_windows, 0), sequence_stride)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(starts)
    data = np.asarray(data)
    offsets = start_index + np.arange(sequence_length) * sampling_rate

    def load_windows(indices):
        return data[starts[indices][:, None] + offsets]

    labels = None
    if targets is not None:
        labels = np.asarray(targets)[start_index + starts]
    return as_dataset(BatchDataset(len(starts), load_windows, labels=labels,
                                   batch_size=batch_size, shuffle=shuffle, seed=seed))


def _check_timeseries_args(n, sequence_stride, sampling_rate, start_index, end_index):
    if start_index:
        if start_index < 0:
            raise ValueError(f"`start_index` must be 0 or greater. Received: "
                             f"start_index={start_index}")
        if start_index >= n:
            raise ValueError(f"`start_index` must be lower than the length of the data ({n}). "
                             f"Received: start_index={start_index}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"`end_index` must be higher than `start_index`. Received: "
                             f"start_index={start_index}, end_index={end_index}")
        if end_index >= n:
            raise ValueError(f"`end_index` must be lower than the length of the data ({n}); "
                             f"leave it None to use all of it. Received: end_index={end_index}")
        if end_index <= 0:
            raise ValueError(f"`end_index` must be higher than 0. Received: end_index={end_index}")
    for name, value in (("sampling_rate", sampling_rate), ("sequence_stride", sequence_stride)):
        if value <= 0:
            raise ValueError(f"`{name}` must be higher than 0. Received: {name}={value}")
        if value >= n:
            raise ValueError(f"`{name}` must be lower than the length of the data ({n}). "
                             f"Received: {name}={value}")


# ---------------------------------------------------------------- split_dataset


@export("loopax.utils.split_dataset")
def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None):
    """Splits a dataset in two, as `keras.utils.split_dataset`.

    Args:
        dataset: an array, a tuple/list of arrays of the same length (split
            together), a dict of such arrays, or a `loopax.tf.data.Dataset` (split
            by sample; a batched one's parts are batched alike).
        left_size, right_size: an int (samples) or a float in (0, 1) (a
            fraction, rounded); one of them may be None (the rest).
        shuffle: shuffle the samples before splitting (Python's `random` with
            `seed`, the permutation Keras draws).

    Returns:
        `(left, right)`: two `loopax.tf.data.Dataset`s of single samples (call
        `.batch(n)` to batch them), or batched like `dataset` when it is batched.
    """
    if left_size is None and right_size is None:
        raise ValueError("split_dataset: pass `left_size`, `right_size` or both (an int number "
                         "of samples or a float fraction in (0, 1)).")
    load_batch, labels, total, batch_size = _as_indexable(dataset)
    left, right = rescale_split_sizes(left_size, right_size, total)
    order = list(range(total))
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(1e6))
        random.Random(seed).shuffle(order)
    order = np.array(order)

    def part(indices):
        return as_dataset(BatchDataset(
            len(indices), lambda i: load_batch(indices[i]), batch_size=batch_size,
            labels=None if labels is None else _take(labels, indices)))
    return part(order[:left]), part(order[total - right:])


def _first(tree):
    """The first entry of every array in a (dict/list/tuple) tree of batches."""
    if isinstance(tree, dict):
        return {k: _first(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_first(v) for v in tree)
    return tree[0]


def _take(tree, indices):
    if isinstance(tree, dict):
        return {k: _take(v, indices) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_take(v, indices) for v in tree)
    return np.asarray(tree)[indices]


def _as_indexable(dataset):
    """`(load_batch, labels, num_samples, batch_size)` of what split_dataset takes."""
    if isinstance(dataset, IndexedDataset):
        dataset = dataset._batches
    if isinstance(dataset, BatchDataset):
        return dataset._load_batch, dataset._labels, dataset.num_samples, dataset.batch_size
    if isinstance(dataset, Dataset):
        return _listed(dataset)
    if isinstance(dataset, (list, tuple, dict)) or hasattr(dataset, "__array__"):
        leaves = list(dataset.values()) if isinstance(dataset, dict) else (
            list(dataset) if isinstance(dataset, (list, tuple)) else [dataset])
        lengths = {len(np.asarray(leaf)) for leaf in leaves}
        if len(lengths) != 1:
            raise ValueError(f"split_dataset: the arrays of `dataset` must have the same length "
                             f"(they are split together); got lengths {sorted(lengths)}.")
        return (lambda indices: _take(dataset, indices)), None, lengths.pop(), None
    raise TypeError(f"split_dataset: `dataset` must be an array, a list/tuple/dict of arrays or "
                    f"a dataset from loopax.utils; got {type(dataset).__name__}.")


def _listed(dataset):
    """A Dataset's samples in memory (a batched one unbatched, as Keras lists a
    tf.data.Dataset), as `(load_batch, None, num_samples, batch_size)`."""
    if dataset._cardinality == -1:
        raise ValueError("split_dataset: the dataset is infinite (repeat()); split it "
                         "before repeating.")
    batch_size = None
    if dataset._batched:
        first = next(iter(dataset._make_iterator()), None)
        batch_size = None if first is None else len(jax_leaves(first)[0])
        dataset = dataset.unbatch()
    samples = list(dataset._make_iterator())
    if not samples:
        raise ValueError("split_dataset: the dataset is empty.")
    stacked = _stack(samples)
    return (lambda indices: _take(stacked, indices)), None, len(samples), batch_size


def jax_leaves(tree):
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in jax_leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in jax_leaves(v)]
    return [tree]


def _stack(samples):
    first = samples[0]
    if isinstance(first, dict):
        return {k: _stack([s[k] for s in samples]) for k in first}
    if isinstance(first, (list, tuple)):
        return type(first)(_stack([s[i] for s in samples]) for i in range(len(first)))
    return np.stack(samples)


def rescale_split_sizes(left_size, right_size, total):
    """`(left, right)` sample counts from int/float/None sizes, validated as Keras does."""
    for name, size in (("left_size", left_size), ("right_size", right_size)):
        if size is not None and type(size) not in (int, float):
            raise TypeError(f"`{name}` must be an int, a float or None; got "
                            f"{type(size).__name__}.")
        if (type(size) is int and not 0 < size < total) or (
                type(size) is float and not 0 < size < 1):
            raise ValueError(f"`{name}` must be a positive int smaller than {total} (the "
                             f"dataset's length) or a float in (0, 1). Received: {name}={size}")
    if type(left_size) is float and type(right_size) is float and left_size + right_size > 1:
        raise ValueError("`left_size` + `right_size` is greater than 1; the fractions must "
                         "sum to at most 1.")
    left = round(left_size * total) if type(left_size) is float else left_size
    right = round(right_size * total) if type(right_size) is float else right_size
    left = total - right if left is None else left
    right = total - left if right is None else right
    if left + right > total:
        raise ValueError(f"`left_size` + `right_size` = {left + right} is more than the "
                         f"dataset's {total} samples.")
    for size, side in ((left, "left"), (right, "right")):
        if size == 0:
            raise ValueError(f"With a dataset of {total} samples, left_size={left_size} and "
                             f"right_size={right_size} leave the {side} split empty; adjust "
                             "them.")
    return int(left), int(right)
