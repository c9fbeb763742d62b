"""`tf.data.Dataset` for data held on the host.

A Dataset is a recipe: a function that makes a fresh iterator of elements
(nested tuples/dicts of NumPy arrays, held on the host; text as object arrays
of `bytes`) and the number of elements when known. Each transformation
returns a new Dataset; iterating one yields its elements as `loopax.Tensor`s
(text as `StringTensor`s), as TensorFlow's eager iteration does. `fit()`,
`evaluate()` and `predict()` take a Dataset of (x, y) batches and read its
NumPy elements directly (its `len()` is the number of steps; a `repeat()`ed one
needs `steps_per_epoch`).

`map` functions run eagerly, once per element (TensorFlow traces them into a
graph): map after `batch` to run them once per batch. `prefetch` is accepted
and does nothing; `cache` keeps the elements of the first complete pass in
memory. The data utilities (`image_dataset_from_directory`, ...,
`timeseries_dataset_from_array`, `split_dataset`) return Datasets too.
"""

from __future__ import annotations

import collections
import glob
import itertools
import math
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.data.strings import StringTensor, as_bytes_array, is_string_array
from loopax.src.state import Variable
from loopax.src.tensor import EagerTensor, Tensor

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2

_LEAF = (Tensor, Variable)


class _Spec:
    """An element's shape and dtype (loopax.tf installs `tf.TensorSpec` instead)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype

    def __repr__(self):
        return f"Spec(shape={self.shape}, dtype={self.dtype})"


_hooks = {"spec": _Spec}


def register_spec_type(spec_type) -> None:
    """Installs the class `element_spec` describes elements with (`tf.TensorSpec`)."""
    _hooks["spec"] = spec_type


def _host_leaf(x):
    """One leaf as a NumPy array: float64 becomes float32 (as `tf.constant`), int64
    int32 without JAX's x64 mode, text an object array of `bytes`."""
    if isinstance(x, StringTensor):
        return x._loopax_value
    if isinstance(x, (str, bytes)):
        return as_bytes_array(x)
    array = np.asarray(x)
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    elif array.dtype == np.int64:
        _warn_if_wrapped(array)
        array = array.astype(jax.dtypes.canonicalize_dtype(np.int64))
    elif array.dtype.kind in "SU":
        array = as_bytes_array(array)
    elif array.dtype == object and is_string_array(array):
        array = as_bytes_array(array)
    return array


def _lists_as_arrays(tree):
    """`tree` with its Python lists as arrays: TensorFlow reads a list as one tensor,
    and tuples and dicts as structure."""
    if isinstance(tree, list):
        return np.asarray(tree)
    if isinstance(tree, tuple):
        return type(tree)(*map(_lists_as_arrays, tree)) if hasattr(tree, "_fields") \
            else tuple(map(_lists_as_arrays, tree))
    if isinstance(tree, dict):
        return type(tree)((k, _lists_as_arrays(v)) for k, v in tree.items())
    return tree


def _to_host(tree):
    """`tree` with every array leaf a NumPy array (see `_host_leaf`)."""
    return jax.tree_util.tree_map(_host_leaf, tree, is_leaf=lambda x: isinstance(x, _LEAF))


def _as_tensor(a):
    if isinstance(a, Dataset):   # a component of `window`'s elements
        return a
    if a.dtype == object:
        # text, or (audio_dataset_from_directory(ragged=True)) arrays of unequal length
        return StringTensor(a) if is_string_array(a) else a
    return EagerTensor(jnp.asarray(a))   # tf.data's elements print as TensorFlow's


def _warn_if_wrapped(a):
    """Warns when a 64-bit integer array holds values its 32-bit JAX form wraps (JAX
    without `jax_enable_x64`): TensorFlow keeps them, and a label 2**40 would train as
    class 0 without a word."""
    if (not isinstance(a, np.ndarray) or a.dtype.kind not in "iu" or a.dtype.itemsize != 8
            or a.size == 0 or jax.config.jax_enable_x64):
        return
    info = np.iinfo(np.int32 if a.dtype.kind == "i" else np.uint32)
    low, high = a.min(), a.max()
    if low < info.min or high > info.max:
        warnings.warn(
            f"tf.data: a {a.dtype} element holds {low if low < info.min else high}, which "
            f"the {info.dtype} array JAX keeps (jax_enable_x64 off) wraps to another value. "
            "Enable 64-bit values (jax.config.update('jax_enable_x64', True)), or keep the "
            f"values within [{info.min}, {info.max}].", stacklevel=2)


def _numpy_value(a):
    return a[()] if isinstance(a, np.ndarray) and a.ndim == 0 else a


def _as_tensors(tree):
    return jax.tree_util.tree_map(_as_tensor, tree)


def _call(fn, element):
    """TensorFlow's calling convention: a tuple element is unpacked into arguments."""
    if isinstance(element, tuple):
        return fn(*element)
    return fn(element)


def _count(n):
    """A cardinality as TensorFlow reports it, from an int or None (unknown)."""
    return UNKNOWN_CARDINALITY if n is None else n


def _rng(seed):
    """A function of the iteration number giving that pass's generator: repeatable
    with `seed`, else drawn once from NumPy's global generator (which
    `tf.random.set_seed` seeds)."""
    base = int(seed) if seed is not None else int(np.random.randint(2 ** 31))
    return lambda epoch: np.random.default_rng([base, epoch])


class Dataset:
    """A re-iterable pipeline of in-memory elements; build one with
    `from_tensor_slices`, `from_tensors`, `range` or `zip`.

    Args:
        make_iterator: A function of no arguments returning an iterator of elements
            (nested tuples/dicts of NumPy arrays).
        cardinality: The number of elements, `INFINITE_CARDINALITY` (-1) or
            `UNKNOWN_CARDINALITY` (-2).
    """

    _signature = None   # the element's specs when known without reading one
    _batched = False    # made by batch/padded_batch (split_dataset rebatches its parts)

    def __init__(self, make_iterator, cardinality, _partial_batches=False):
        self._make_iterator = make_iterator
        self._cardinality = cardinality
        self._partial_batches = _partial_batches

    # ---- sources ----------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """The slices of `tensors` (an array, or a tuple/dict of arrays of equal
        length) along their first axis, one element each.

        Args:
            tensors: An array-like, Tensor, or nested tuple/dict of them.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of `len(tensors)` elements.
        """
        data = _to_host(_lists_as_arrays(tensors))
        leaves = jax.tree_util.tree_leaves(data)
        if not leaves:
            raise ValueError("Dataset.from_tensor_slices needs at least one array.")
        lengths = {leaf.shape[0] if leaf.ndim else None for leaf in leaves}
        if None in lengths or len(lengths) != 1:
            shapes = [leaf.shape for leaf in leaves]
            raise ValueError(
                "Dataset.from_tensor_slices: every array must have the same length along "
                f"its first axis (one element per row); got shapes {shapes}.")
        n = lengths.pop()

        def make_iterator():
            return (jax.tree_util.tree_map(lambda a, i=i: a[i, ...], data) for i in range(n))
        return Dataset(make_iterator, n)

    @staticmethod
    def from_tensors(tensors, name=None):
        """One element: `tensors` itself.

        Args:
            tensors: An array-like, Tensor, or nested tuple/dict of them.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of one element.
        """
        data = _to_host(tensors)
        return Dataset(lambda: iter([data]), 1)

    @staticmethod
    def range(*args, output_type=None, name=None):
        """The integers of `range(*args)`, as scalars.

        Args:
            *args: `stop`, or `start, stop[, step]`, as Python's `range`.
            output_type: The integer dtype (default int64: int32 without JAX x64).
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of scalars.
        """
        numbers = range(*args)
        dtype = jax.dtypes.canonicalize_dtype(np.dtype(output_type or np.int64))
        return Dataset(lambda: (np.asarray(i, dtype) for i in numbers), len(numbers))

    @staticmethod
    def zip(*datasets, name=None):
        """Elements of the given datasets side by side, as long as the shortest.

        Args:
            *datasets: Datasets, or one tuple/dict of Datasets (the element's structure).
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of tuples (or dicts) of the datasets' elements.
        """
        structure = datasets[0] if len(datasets) == 1 and not isinstance(
            datasets[0], Dataset) else tuple(datasets)
        members, treedef = jax.tree_util.tree_flatten(
            structure, is_leaf=lambda x: isinstance(x, Dataset))
        for member in members:
            if not isinstance(member, Dataset):
                raise TypeError(f"Dataset.zip: every member must be a Dataset (or a nested "
                                f"tuple/dict of them); got {type(member).__name__}.")
        counts = [d._cardinality for d in members]
        known = [c for c in counts if c >= 0]
        n = min(known) if known else (
            INFINITE_CARDINALITY if all(c == INFINITE_CARDINALITY for c in counts)
            else UNKNOWN_CARDINALITY)

        def make_iterator():
            for parts in zip(*(d._make_iterator() for d in members)):
                yield jax.tree_util.tree_unflatten(treedef, list(parts))
        return Dataset(make_iterator, n)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None):
        """The elements a Python generator yields, each checked against (and cast
        to) `output_signature`.

        Args:
            generator: A callable returning an iterator (called afresh each pass),
                with `args` as its arguments.
            output_types: The dtypes of an element (deprecated form; nested like it).
            output_shapes: The shapes of an element (deprecated form; None entries
                are free).
            args: A tuple of arguments to call `generator` with (as NumPy values).
            output_signature: A nested structure of `tf.TensorSpec`s, one per component.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of unknown cardinality.
        """
        if not callable(generator):
            raise TypeError("Dataset.from_generator: `generator` must be a callable that "
                            "returns an iterator (pass the generator function, not its "
                            f"result); got {type(generator).__name__}.")
        if output_signature is None and output_types is None:
            raise TypeError("Dataset.from_generator needs `output_signature` (a structure "
                            "of tf.TensorSpec), or the deprecated `output_types`.")
        if output_signature is not None and (output_types is not None
                                             or output_shapes is not None):
            raise TypeError("Dataset.from_generator: pass `output_signature` alone, not "
                            "with `output_types`/`output_shapes`.")
        if output_signature is None:
            output_signature = _signature_from(output_types, output_shapes)
        signature = output_signature
        call_args = tuple(np.asarray(a) if not isinstance(a, (str, bytes)) else a
                          for a in (args or ()))

        def make_iterator():
            for element in generator(*call_args):
                yield _conform(element, signature)
        dataset = Dataset(make_iterator, UNKNOWN_CARDINALITY)
        dataset._signature = signature
        return dataset

    @staticmethod
    def counter(start=0, step=1, dtype=None, name=None):
        """`start`, `start + step`, ... forever (`tf.data.experimental.Counter`).

        Args:
            start: The first number.
            step: The increment.
            dtype: The dtype (default int64: int32 without JAX x64).
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            An infinite Dataset of scalars.
        """
        dtype = jax.dtypes.canonicalize_dtype(np.dtype(dtype or np.int64))
        return Dataset(lambda: (np.asarray(start + i * step, dtype) for i in itertools.count()),
                       INFINITE_CARDINALITY)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """Each element drawn from one of `datasets`, picked at random with
        probabilities `weights` (resampling, as in an imbalanced-data pipeline).

        Args:
            datasets: A list of Datasets of the same element structure.
            weights: One probability per dataset (normalized; default uniform), a list
                or a Dataset of such lists (one per element).
            seed: An int for a repeatable choice sequence.
            stop_on_empty_dataset: Stop when the picked dataset is exhausted; otherwise
                (the default) go on drawing from the others.
            rerandomize_each_iteration: Draw a new sequence on each pass (default:
                the same sequence on each pass when `seed` is given).

        Returns:
            A Dataset.
        """
        datasets = list(datasets)
        if not datasets:
            raise ValueError("sample_from_datasets: `datasets` must not be empty.")
        for i, d in enumerate(datasets):
            if not isinstance(d, Dataset):
                raise TypeError(f"sample_from_datasets: datasets[{i}] is a "
                                f"{type(d).__name__}, not a Dataset.")
        weight_source = weights if isinstance(weights, Dataset) else None
        if weight_source is None:
            w = np.ones(len(datasets)) if weights is None else np.asarray(
                weights.numpy() if hasattr(weights, "numpy") else weights, np.float64)
            if w.shape != (len(datasets),) or (w < 0).any() or w.sum() <= 0:
                raise ValueError(f"sample_from_datasets: `weights` must be {len(datasets)} "
                                 f"non-negative numbers, one per dataset; got {weights!r}.")
        rerandomize = seed is None if rerandomize_each_iteration is None \
            else rerandomize_each_iteration
        rng_of, passes = _rng(seed), itertools.count()

        def make_iterator():
            rng = rng_of(next(passes) if rerandomize else 0)
            iterators = [d._make_iterator() for d in datasets]
            alive = np.ones(len(datasets), bool)
            weight_rows = weight_source._make_iterator() if weight_source is not None else None
            while alive.any():
                if weight_rows is None:
                    row = w
                else:
                    row = next(weight_rows, None)
                    if row is None:
                        return
                    row = np.asarray(row, np.float64).reshape(-1)
                p = np.where(alive, row, 0.0)
                if p.sum() <= 0:
                    return
                i = int(rng.choice(len(datasets), p=p / p.sum()))
                try:
                    yield next(iterators[i])
                except StopIteration:
                    if stop_on_empty_dataset:
                        return
                    alive[i] = False
        counts = [d._cardinality for d in datasets]
        n = INFINITE_CARDINALITY if all(c == INFINITE_CARDINALITY for c in counts) \
            and weight_source is None else UNKNOWN_CARDINALITY
        return Dataset(make_iterator, n)

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        """Each element taken from `datasets[i]`, `i` the next element of
        `choice_dataset`.

        Args:
            datasets: A list of Datasets of the same element structure.
            choice_dataset: A Dataset of scalar integers in `[0, len(datasets))`.
            stop_on_empty_dataset: Stop when the chosen dataset is exhausted; otherwise
                skip that choice.

        Returns:
            A Dataset.
        """
        datasets = list(datasets)
        if not datasets:
            raise ValueError("choose_from_datasets: `datasets` must not be empty.")
        if not isinstance(choice_dataset, Dataset):
            raise TypeError("choose_from_datasets: `choice_dataset` must be a Dataset of "
                            "scalar integers (e.g. tf.data.Dataset.range(3).repeat()).")

        def make_iterator():
            iterators = [d._make_iterator() for d in datasets]
            exhausted = set()
            for choice in choice_dataset._make_iterator():
                choice = np.asarray(choice)
                if choice.ndim or choice.dtype.kind not in "iu":
                    raise TypeError("choose_from_datasets: `choice_dataset` must yield scalar "
                                    f"integers; got {choice.dtype} of shape {choice.shape}.")
                i = int(choice)
                if not 0 <= i < len(datasets):
                    raise ValueError(f"choose_from_datasets: choice {i} is outside [0, "
                                     f"{len(datasets)}): one per dataset.")
                if i in exhausted:
                    continue
                try:
                    yield next(iterators[i])
                except StopIteration:
                    if stop_on_empty_dataset:
                        return
                    exhausted.add(i)
                    if len(exhausted) == len(datasets):
                        return
        return Dataset(make_iterator, UNKNOWN_CARDINALITY)

    @staticmethod
    def random(seed=None, rerandomize_each_iteration=None, name=None):
        """Random non-negative int64 scalars (int32 without x64), forever.

        Args:
            seed: An int for a repeatable sequence.
            rerandomize_each_iteration: A new sequence on each pass.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            An infinite Dataset of scalars.
        """
        dtype = jax.dtypes.canonicalize_dtype(np.int64)
        rng_of, passes = _rng(seed), itertools.count()

        def make_iterator():
            rng = rng_of(next(passes) if rerandomize_each_iteration else 0)
            while True:
                yield np.asarray(rng.integers(np.iinfo(dtype).max), dtype)
        return Dataset(make_iterator, INFINITE_CARDINALITY)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        """The paths of the files that glob patterns match, as scalar strings.

        Args:
            file_pattern: A glob pattern (`"data/*.csv"`), a list of them, or a string
                Tensor of them.
            shuffle: Whether to shuffle the paths (default True: a new order on each
                pass); False gives them sorted.
            seed: An int for a repeatable order.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of paths.

        Raises:
            ValueError: No file matches.
        """
        patterns = _patterns(file_pattern)
        paths = sorted({path for p in patterns for path in glob.glob(p)})
        if not paths:
            raise ValueError(f"Dataset.list_files: no files match file_pattern "
                             f"{file_pattern!r}.")
        dataset = Dataset.from_tensor_slices(np.asarray(paths, dtype=object))
        return dataset if shuffle is False else dataset.shuffle(len(paths), seed)

    # ---- transformations --------------------------------------------------------------
    def _then(self, make_iterator, cardinality, partial_batches=None, batched=None):
        dataset = Dataset(make_iterator, cardinality,
                          self._partial_batches if partial_batches is None else partial_batches)
        dataset._batched = self._batched if batched is None else batched
        return dataset

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None):
        """Consecutive elements stacked into batches of `batch_size`.

        Args:
            batch_size: Elements per batch.
            drop_remainder: Drop a last batch smaller than `batch_size` (then every
                batch has the same shape: one compiled step in `fit`).
            num_parallel_calls: Accepted for TensorFlow compatibility; unused.
            deterministic: Accepted for TensorFlow compatibility; unused.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of batches.
        """
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"Dataset.batch: batch_size must be positive, got {batch_size}.")
        source = self._make_iterator

        def make_iterator():
            iterator = source()
            while True:
                chunk = list(itertools.islice(iterator, batch_size))
                if not chunk or (drop_remainder and len(chunk) < batch_size):
                    return
                yield jax.tree_util.tree_map(lambda *xs: np.stack(xs), *chunk)
        n = self._cardinality
        if n >= 0:
            n = n // batch_size if drop_remainder else math.ceil(n / batch_size)
        return self._then(make_iterator, n, partial_batches=not drop_remainder, batched=True)

    def unbatch(self, name=None):
        """The rows of each element (the inverse of `batch`).

        Args:
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of rows.
        """
        source = self._make_iterator

        def make_iterator():
            for element in source():
                rows = len(jax.tree_util.tree_leaves(element)[0])
                for i in range(rows):
                    yield jax.tree_util.tree_map(lambda a, i=i: a[i, ...], element)
        return self._then(make_iterator, UNKNOWN_CARDINALITY, partial_batches=False,
                          batched=False)

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """`map_func` applied to each element (a tuple element is passed as arguments).

        Args:
            map_func: A function of the element's Tensors, returning the new element.
            num_parallel_calls: Accepted for TensorFlow compatibility (runs in order).
            deterministic: Accepted for TensorFlow compatibility; unused.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of `map_func`'s results.
        """
        source = self._make_iterator

        def make_iterator():
            for element in source():
                yield _to_host(_call(map_func, _as_tensors(element)))
        return self._then(make_iterator, self._cardinality)

    def filter(self, predicate, name=None):
        """The elements for which `predicate` is true.

        Args:
            predicate: A function of the element's Tensors returning a scalar bool.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset (of unknown cardinality).
        """
        source = self._make_iterator

        def make_iterator():
            return (e for e in source() if bool(_call(predicate, _as_tensors(e))))
        return self._then(make_iterator, UNKNOWN_CARDINALITY)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        """Elements in random order, drawn from a buffer of `buffer_size` (TensorFlow's
        algorithm: a buffer as large as the dataset gives a uniform shuffle).

        Args:
            buffer_size: How many elements the buffer holds.
            seed: An int for a repeatable order; None draws from NumPy's global
                generator (which `tf.random.set_seed` seeds).
            reshuffle_each_iteration: A new order each time the dataset is iterated.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset with the same elements.
        """
        buffer_size = int(buffer_size)
        if buffer_size < 1:
            raise ValueError(f"Dataset.shuffle: buffer_size must be positive, got "
                             f"{buffer_size}.")
        source = self._make_iterator
        rng_of, epochs = _rng(seed), itertools.count()

        def make_iterator():
            epoch = next(epochs) if reshuffle_each_iteration else 0
            return _shuffled(source(), buffer_size, rng_of(epoch))
        return self._then(make_iterator, self._cardinality)

    def take(self, count, name=None):
        """The first `count` elements (-1: all).

        Args:
            count: How many.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.
        """
        count = int(count)
        if count < 0:
            return self
        source = self._make_iterator
        n = self._cardinality
        n = count if n == INFINITE_CARDINALITY else (min(n, count) if n >= 0 else n)
        return self._then(lambda: itertools.islice(source(), count), n)

    def skip(self, count, name=None):
        """All but the first `count` elements.

        Args:
            count: How many to skip.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.
        """
        count = int(count)
        source = self._make_iterator
        n = self._cardinality
        if n >= 0:
            n = max(n - count, 0)
        return self._then(lambda: itertools.islice(source(), count, None), n)

    def repeat(self, count=None, name=None):
        """The dataset `count` times over (None or -1: forever).

        Args:
            count: How many times.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.
        """
        source = self._make_iterator
        forever = count is None or int(count) < 0

        def make_iterator():
            rounds = itertools.count() if forever else range(int(count))
            for _ in rounds:
                empty = True
                for element in source():
                    empty = False
                    yield element
                if empty:
                    return
        n = self._cardinality
        if forever:
            n = 0 if n == 0 else INFINITE_CARDINALITY
        elif n >= 0:
            n = n * int(count)
        return self._then(make_iterator, n)

    def concatenate(self, dataset, name=None):
        """This dataset's elements, then `dataset`'s.

        Args:
            dataset: A Dataset of elements of the same structure.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.
        """
        first, second = self._make_iterator, dataset._make_iterator
        counts = (self._cardinality, dataset._cardinality)
        n = sum(counts) if min(counts) >= 0 else min(counts)
        return self._then(lambda: itertools.chain(first(), second()), n)

    def enumerate(self, start=0, name=None):
        """(index, element) pairs.

        Args:
            start: The first index.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of (index, element) tuples.
        """
        source = self._make_iterator
        dtype = jax.dtypes.canonicalize_dtype(np.int64)
        return self._then(lambda: ((np.asarray(i, dtype), e)
                                   for i, e in enumerate(source(), start)), self._cardinality)

    def prefetch(self, buffer_size=None, name=None):
        """This dataset (the data is in memory: nothing to prefetch).

        Args:
            buffer_size: Accepted for TensorFlow compatibility; unused.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            This Dataset.
        """
        return self

    def cache(self, filename="", name=None):
        """The elements of the first complete pass, kept in memory and replayed on
        the next passes (files are read and `map` functions run once).

        Args:
            filename: Accepted for TensorFlow compatibility (loopax caches in memory).
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.
        """
        if self._cardinality == INFINITE_CARDINALITY:
            return self
        source, cached, n = self._make_iterator, [], self._cardinality

        def make_iterator():
            if cached:
                yield from cached[0]
                return
            seen = []
            for element in source():
                seen.append(element)
                if len(seen) == n and not cached:
                    # complete: kept now, as a reader that stops after the last element
                    # (fit's steps) never resumes the generator to its end
                    cached.append(seen)
                yield element
            if not cached:
                cached.append(seen)   # a complete pass (an interrupted one is not kept)
        return self._then(make_iterator, self._cardinality)

    def flat_map(self, map_func, name=None):
        """The elements of the Datasets `map_func` returns, one element after another.

        Args:
            map_func: A function of an element's Tensors returning a Dataset.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.
        """
        source = self._make_iterator

        def make_iterator():
            for element in source():
                yield from _dataset_of(_call(map_func, _as_tensors(element)),
                                       "flat_map")._make_iterator()
        return self._then(make_iterator, UNKNOWN_CARDINALITY)

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """Windows of `size` elements, each a Dataset (a tuple or dict of Datasets
        for tuple or dict elements); `flat_map(lambda w: w.batch(size))` makes them
        batches.

        Window `k` holds elements `k * shift + i * stride` for `i < size` (fewer at
        the end unless `drop_remainder`).

        Args:
            size: Elements per window.
            shift: Elements between the starts of windows (default `size`).
            stride: Elements between the elements of a window.
            drop_remainder: Drop the windows at the end that have fewer than `size`.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of windows.
        """
        size, stride = int(size), int(stride)
        shift = size if shift is None else int(shift)
        for what, value in (("size", size), ("shift", shift), ("stride", stride)):
            if value < 1:
                raise ValueError(f"Dataset.window: {what} must be positive, got {value}.")
        source = self._make_iterator

        def make_iterator():
            for window in _windows(source(), size, shift, stride, drop_remainder):
                yield jax.tree_util.tree_map(
                    lambda *parts: Dataset.from_tensor_slices(np.stack(parts)), *window)
        return self._then(make_iterator,
                          _window_count(self._cardinality, size, shift, stride, drop_remainder),
                          partial_batches=False, batched=False)

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None):
        """Elements of the Datasets `map_func` returns for `cycle_length` input
        elements at a time, `block_length` from each in turn (TensorFlow's order).

        Args:
            map_func: A function of an element's Tensors returning a Dataset.
            cycle_length: How many input elements are open at once (default 1 here,
                as TensorFlow's default on one CPU thread differs by machine).
            block_length: Consecutive elements taken from each (default 1).
            num_parallel_calls: Accepted for TensorFlow compatibility (runs in order).
            deterministic: Accepted for TensorFlow compatibility; unused.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.
        """
        cycle = 1 if cycle_length in (None, AUTOTUNE) else int(cycle_length)
        block = 1 if block_length is None else int(block_length)
        source = self._make_iterator

        def make_iterator():
            inputs = source()
            open_ = []
            while True:
                while len(open_) < cycle:
                    element = next(inputs, None)
                    if element is None:
                        break
                    open_.append(_dataset_of(_call(map_func, _as_tensors(element)),
                                             "interleave")._make_iterator())
                if not open_:
                    return
                for it in list(open_):
                    for _ in range(block):
                        value = next(it, None)
                        if value is None:
                            open_.remove(it)
                            break
                        yield value
        return self._then(make_iterator, UNKNOWN_CARDINALITY)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None):
        """Batches whose components are padded (at the end of each axis) to the
        longest in the batch, or to `padded_shapes`.

        Args:
            batch_size: Elements per batch.
            padded_shapes: The padded shape of each component (None entries: the
                batch's longest), or None for all.
            padding_values: The padding value of each component (default 0, or b""
                for strings).
            drop_remainder: Drop a last batch smaller than `batch_size`.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset of batches.
        """
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"Dataset.padded_batch: batch_size must be positive, got "
                             f"{batch_size}.")
        source = self._make_iterator

        def pad_stack(*xs, shape=None, value=None):
            rank = xs[0].ndim
            longest = [max(x.shape[a] for x in xs) for a in range(rank)]
            if shape is not None:
                shape = list(shape.as_list() if hasattr(shape, "as_list") else shape)
                longest = [m if s is None or s == -1 else int(s) for m, s in zip(longest, shape)]
            fill = (b"" if xs[0].dtype == object else 0) if value is None else value
            out = np.full((len(xs), *longest), fill, dtype=xs[0].dtype)
            for i, x in enumerate(xs):
                if any(d > m for d, m in zip(x.shape, longest)):
                    raise ValueError(f"padded_batch: an element of shape {x.shape} is larger "
                                     f"than padded_shapes {tuple(longest)}.")
                out[(i, *(slice(0, d) for d in x.shape))] = x
            return out

        def make_iterator():
            iterator = source()
            while True:
                chunk = list(itertools.islice(iterator, batch_size))
                if not chunk or (drop_remainder and len(chunk) < batch_size):
                    return
                leaves = [jax.tree_util.tree_flatten(c) for c in chunk]
                treedef = leaves[0][1]
                columns = list(zip(*(leaf for leaf, _ in leaves)))
                shapes = [None] * len(columns) if padded_shapes is None else \
                    jax.tree_util.tree_leaves(padded_shapes, is_leaf=_is_shape)
                values = [None] * len(columns) if padding_values is None else \
                    jax.tree_util.tree_leaves(padding_values)
                yield jax.tree_util.tree_unflatten(treedef, [
                    pad_stack(*col, shape=sh, value=v)
                    for col, sh, v in zip(columns, shapes, values)])
        n = self._cardinality
        if n >= 0:
            n = n // batch_size if drop_remainder else math.ceil(n / batch_size)
        return self._then(make_iterator, n, partial_batches=not drop_remainder, batched=True)

    def reduce(self, initial_state, reduce_func, name=None):
        """`reduce_func(state, element)` folded over the elements, from `initial_state`.

        Args:
            initial_state: The initial state (Tensors).
            reduce_func: A function of (state, element) returning the new state.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            The final state.
        """
        state = initial_state
        for element in self:
            state = reduce_func(state, element)
        return _as_tensors(_to_host(state))

    def apply(self, transformation_func, name=None):
        """`transformation_func(self)`.

        Args:
            transformation_func: A function of a Dataset returning a Dataset.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            The Dataset it returns.
        """
        return transformation_func(self)

    def shard(self, num_shards, index, name=None):
        """Every `num_shards`-th element, starting at `index`.

        Args:
            num_shards: The number of shards.
            index: This shard, in `[0, num_shards)`.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.
        """
        num_shards, index = int(num_shards), int(index)
        if not 0 <= index < num_shards:
            raise ValueError(f"Dataset.shard: index must be in [0, {num_shards}), got {index}.")
        source = self._make_iterator
        n = self._cardinality
        if n >= 0:
            n = len(range(index, n, num_shards))
        return self._then(lambda: itertools.islice(source(), index, None, num_shards), n)

    def take_while(self, predicate, name=None):
        """The elements up to the first for which `predicate` is false.

        Args:
            predicate: A function of the element's Tensors returning a scalar bool.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.
        """
        source = self._make_iterator
        return self._then(lambda: itertools.takewhile(
            lambda e: bool(_call(predicate, _as_tensors(e))), source()), UNKNOWN_CARDINALITY)

    def get_single_element(self, name=None):
        """The one element of a Dataset of one element (raises otherwise)."""
        it = iter(self)
        first = next(it, None)
        if first is None or next(it, None) is not None:
            raise ValueError("Dataset.get_single_element: the dataset must have exactly one "
                             "element.")
        return first

    def with_options(self, options, name=None):
        """This dataset (tf.data options do not apply).

        Args:
            options: Accepted for TensorFlow compatibility; unused.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            This Dataset.
        """
        return self

    # ---- reading ------------------------------------------------------------------
    def __iter__(self):
        return DatasetIterator(self)

    def as_numpy_iterator(self):
        """Returns an iterator of the elements as NumPy values (scalars as NumPy scalars,
        strings as `bytes`, as TensorFlow's)."""
        return (jax.tree_util.tree_map(_numpy_value, e) for e in self._make_iterator())

    def cardinality(self):
        """Returns the number of elements, -1 (infinite) or -2 (unknown), as a Tensor."""
        return Tensor(jnp.asarray(self._cardinality))

    def __len__(self):
        if self._cardinality == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if self._cardinality == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return self._cardinality

    def __bool__(self):
        return True   # as TensorFlow's: a Dataset is not a container to test for emptiness

    @property
    def element_spec(self):
        """The TensorSpecs of an element (read from the first; a batch dimension
        that may be partial is None)."""
        if self._signature is not None:
            return jax.tree_util.tree_map(
                lambda spec: _hooks["spec"](spec.shape, spec.dtype) if spec.shape is not None
                else _hooks["spec"](None, spec.dtype), self._signature, is_leaf=_is_spec)
        first = next(iter(self._make_iterator()), None)
        if first is None:
            raise ValueError("element_spec of an empty dataset is unknown in loopax.")

        def spec(a):
            shape = list(a.shape)
            if self._partial_batches and shape:
                shape[0] = None
            return _hooks["spec"](shape, a.dtype)
        return jax.tree_util.tree_map(spec, first)

    def _fit_source(self):
        """What fit/evaluate/predict read: the NumPy elements, re-iterable, with the
        dataset's `len` (the data utilities' datasets give their indexed batches)."""
        return _NumpyElements(self)

    def __repr__(self):
        n = {INFINITE_CARDINALITY: "infinite", UNKNOWN_CARDINALITY: "unknown"}.get(
            self._cardinality, self._cardinality)
        return f"<loopax.tf.data.Dataset cardinality={n}>"


def _is_spec(x):
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.ndarray)


def _is_shape(x):
    return x is None or (isinstance(x, (list, tuple)) and all(
        v is None or isinstance(v, (int, np.integer)) for v in x))


def _signature_from(output_types, output_shapes):
    """`output_signature` from the deprecated `output_types` and `output_shapes`."""
    types, treedef = jax.tree_util.tree_flatten(output_types)
    if output_shapes is None:
        shapes = [None] * len(types)
    else:
        shapes = jax.tree_util.tree_leaves(output_shapes, is_leaf=_is_shape)
        if len(shapes) != len(types):
            raise ValueError("Dataset.from_generator: `output_shapes` must have the structure "
                             f"of `output_types` ({len(types)} components); got "
                             f"{output_shapes!r}.")
    return jax.tree_util.tree_unflatten(treedef, [_free_spec(s, t)
                                                  for s, t in zip(shapes, types)])


def _free_spec(shape, dtype):
    spec = _Spec((), dtype)
    spec.shape = None if shape is None else tuple(shape)
    return spec


def _conform(element, signature):
    """A generator's element as host arrays of the signature's dtypes, after checking
    its structure and shapes (None dimensions are free)."""
    if _is_spec(signature):
        return _conform_leaf(element, signature)
    if isinstance(signature, dict):
        if not isinstance(element, dict) or set(element) != set(signature):
            raise TypeError(f"`generator` yielded an element that did not match the expected "
                            f"structure: {element!r} where `output_signature` is {signature!r}.")
        return {k: _conform(element[k], spec) for k, spec in signature.items()}
    if isinstance(signature, (tuple, list)):
        if not isinstance(element, (tuple, list)) or len(element) != len(signature):
            raise TypeError(f"`generator` yielded an element that did not match the expected "
                            f"structure: {element!r} where `output_signature` has "
                            f"{len(signature)} components ({signature!r}).")
        return tuple(_conform(e, spec) for e, spec in zip(element, signature))
    raise TypeError(f"Dataset.from_generator: `output_signature` must be a tf.TensorSpec or "
                    f"a tuple/dict of them; got {signature!r}.")


def _conform_leaf(value, spec):
    dtype = np.dtype(spec.dtype) if spec.dtype is not None else None
    if isinstance(value, Tensor) and not isinstance(value, StringTensor):
        value = value._loopax_value
    if dtype is not None and dtype.kind == "O":
        array = as_bytes_array(value)
    else:
        try:
            array = np.asarray(value, dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"`generator` yielded {value!r}, which is not convertible to "
                            f"{dtype} as `output_signature` asks ({e}).") from None
        array = _host_leaf(array) if dtype is None else array
        if array.dtype in (np.int64, np.uint64):
            array = array.astype(jax.dtypes.canonicalize_dtype(array.dtype))
    want = getattr(spec, "shape", None)
    if want is not None:
        want = [None if d is None else int(d) for d in
                (want.as_list() if hasattr(want, "as_list") else want)]
        if len(want) != array.ndim or any(w is not None and w != d
                                           for w, d in zip(want, array.shape)):
            raise TypeError(f"`generator` yielded an element of shape {array.shape} where an "
                            f"element of shape {tuple(want)} was expected.")
    return array


_END = object()


class DatasetIterator:
    """An iterator over a Dataset's elements (as Tensors) that knows its position,
    which `tf.train.Checkpoint` saves and restores.

    Args:
        dataset: The Dataset to read.
    """

    def __init__(self, dataset):
        self._dataset = dataset
        self._elements = dataset._make_iterator()
        self.position = 0   # elements given so far

    def __iter__(self):
        return self

    def __next__(self):
        element = next(self._elements)
        self.position += 1
        return _as_tensors(element)

    def get_next(self):
        """The next element (TensorFlow's name for `next(iterator)`)."""
        return next(self)

    def seek(self, position):
        """Continues after the first `position` elements, reading the dataset again
        from its start (a `shuffle` without a seed gives another order).

        Args:
            position: How many elements to have been given.
        """
        if position < 0:
            raise ValueError(f"DatasetIterator.seek: position must be >= 0; got {position}.")
        self._elements = self._dataset._make_iterator()
        for i in range(position):
            if next(self._elements, _END) is _END:
                raise ValueError(f"DatasetIterator.seek: the dataset has {i} elements, "
                                 f"fewer than the position {position} to restore; restore "
                                 "into an iterator of the dataset that was saved.")
        self.position = position


class _NumpyElements:
    def __init__(self, dataset):
        self._dataset = dataset

    def __iter__(self):
        return iter(self._dataset._make_iterator())

    def __len__(self):
        return len(self._dataset)


def _dataset_of(value, where):
    if not isinstance(value, Dataset):
        raise TypeError(f"Dataset.{where}: `map_func` must return a Dataset; got "
                        f"{type(value).__name__}.")
    return value


def _patterns(file_pattern):
    """`list_files`'s patterns as a list of str."""
    if isinstance(file_pattern, Tensor):
        file_pattern = file_pattern.numpy()
    if isinstance(file_pattern, (str, bytes, os.PathLike)):
        file_pattern = [file_pattern]
    patterns = [os.fsdecode(p) for p in np.asarray(file_pattern, dtype=object).reshape(-1)]
    if not patterns:
        raise ValueError("Dataset.list_files: file_pattern must name at least one pattern.")
    return patterns


def _windows(elements, size, shift, stride, drop_remainder):
    """The lists of elements `window` makes, read as the elements arrive."""
    span = (size - 1) * stride + 1
    buffer, first, start = collections.deque(), 0, 0   # buffer[0] is element `first`
    for index, element in enumerate(elements):
        if index < start:
            continue   # between windows (shift > span)
        if not buffer:
            first = index
        buffer.append(element)
        while start + span - 1 == index:
            yield [buffer[i - first] for i in range(start, start + span, stride)]
            start += shift
            while buffer and first < start:
                buffer.popleft()
                first += 1
    while buffer and not drop_remainder:
        yield [buffer[i - first] for i in range(start, first + len(buffer), stride)]
        start += shift
        while buffer and first < start:
            buffer.popleft()
            first += 1


def _window_count(n, size, shift, stride, drop_remainder):
    """How many windows `window` makes of `n` elements (or the unknown/infinite marks)."""
    if n < 0:
        return n
    if not drop_remainder:
        return math.ceil(n / shift)
    span = (size - 1) * stride + 1
    return 0 if n < span else (n - span) // shift + 1


def _shuffled(iterator, buffer_size, rng):
    """TensorFlow's shuffle: fill a buffer, then repeatedly emit a random entry of it
    and put the next element in its place; drain at the end."""
    buffer = list(itertools.islice(iterator, buffer_size))
    for element in iterator:
        i = int(rng.integers(len(buffer)))
        yield buffer[i]
        buffer[i] = element
    order = rng.permutation(len(buffer))
    for i in order:
        yield buffer[i]
