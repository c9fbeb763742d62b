"""`tf.data.Dataset` for in-memory data.

A Dataset is a recipe: a function that makes a fresh iterator of elements
(nested tuples/dicts of NumPy arrays, held on the host) and the number of
elements when known. Each transformation returns a new Dataset; iterating
one yields its elements as `loopax.Tensor`s, as TensorFlow's eager iteration
does. `fit()`, `evaluate()` and `predict()` take a Dataset of (x, y) batches as
they take any re-iterable source of batches (its `len()` is the number of
steps; a `repeat()`ed one needs `steps_per_epoch`).

`map` functions run eagerly, once per element (TensorFlow traces them into a
graph): map after `batch` to run them once per batch. `prefetch` and `cache`
are accepted and do nothing (the data is already in memory).
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.state import Variable
from loopax.src.tensor import Tensor
from loopax.src.tf_compat.function import TensorSpec
from loopax.src.tf_compat.tensors import document_module

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2

_LEAF = (Tensor, Variable)


def _to_host(tree):
    """`tree` with every array leaf a NumPy array (float64 data becomes float32, as
    `tf.constant`; Python numbers become NumPy scalars)."""
    def convert(x):
        array = np.asarray(x)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype == np.int64:
            array = array.astype(jax.dtypes.canonicalize_dtype(np.int64))
        elif array.dtype.kind in "USO":
            raise TypeError(
                "tf.data in loopax holds numbers only (XLA has no string tensors): map text "
                "to integer ids with NumPy or loopax.layers.StringLookup first.")
        return array
    return jax.tree_util.tree_map(convert, tree, is_leaf=lambda x: isinstance(x, _LEAF))


def _as_tensors(tree):
    return jax.tree_util.tree_map(lambda a: Tensor(jnp.asarray(a)), tree)


def _call(fn, element):
    """TensorFlow's calling convention: a tuple element is unpacked into arguments."""
    if isinstance(element, tuple):
        return fn(*element)
    return fn(element)


def _count(n):
    """A cardinality as TensorFlow reports it, from an int or None (unknown)."""
    return UNKNOWN_CARDINALITY if n is None else n


class Dataset:
    """A re-iterable pipeline of in-memory elements; build one with
    `from_tensor_slices`, `from_tensors`, `range` or `zip`.

    Args:
        make_iterator: A function of no arguments returning an iterator of elements
            (nested tuples/dicts of NumPy arrays).
        cardinality: The number of elements, `INFINITE_CARDINALITY` (-1) or
            `UNKNOWN_CARDINALITY` (-2).
    """

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
        if isinstance(tensors, list):
            tensors = np.asarray(tensors)
        data = _to_host(tensors)
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
            return (jax.tree_util.tree_map(lambda a, i=i: a[i], data) for i in range(n))
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
        if isinstance(structure, dict):
            keys, members = list(structure), list(structure.values())
        else:
            keys, members = None, list(structure)
        counts = [d._cardinality for d in members]
        known = [c for c in counts if c >= 0]
        n = min(known) if known else (
            INFINITE_CARDINALITY if all(c == INFINITE_CARDINALITY for c in counts)
            else UNKNOWN_CARDINALITY)

        def make_iterator():
            for parts in zip(*(d._make_iterator() for d in members)):
                yield dict(zip(keys, parts)) if keys is not None else tuple(parts)
        return Dataset(make_iterator, n)

    # ---- transformations --------------------------------------------------------------
    def _then(self, make_iterator, cardinality, partial_batches=None):
        return Dataset(make_iterator, cardinality,
                       self._partial_batches if partial_batches is None else partial_batches)

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
        return self._then(make_iterator, n, partial_batches=not drop_remainder)

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
                    yield jax.tree_util.tree_map(lambda a, i=i: a[i], element)
        return self._then(make_iterator, UNKNOWN_CARDINALITY, partial_batches=False)

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
        base_seed = int(seed) if seed is not None else int(np.random.randint(2 ** 31))
        epochs = itertools.count()

        def make_iterator():
            epoch = next(epochs) if reshuffle_each_iteration else 0
            return _shuffled(source(), buffer_size, np.random.default_rng([base_seed, epoch]))
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

    def shard(self, num_shards, index, name=None):
        """Every `num_shards`-th element from element `index` on (the share of one
        of `num_shards` input pipelines, as `tf.distribute` dataset functions use).

        Args:
            num_shards: How many shards.
            index: This shard's index, in [0, num_shards).
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            A Dataset.

        Raises:
            ValueError: `index` is not in [0, num_shards).
        """
        num_shards, index = int(num_shards), int(index)
        if num_shards < 1 or not 0 <= index < num_shards:
            raise ValueError(f"Dataset.shard: index={index} must be in [0, num_shards="
                             f"{num_shards}).")
        source = self._make_iterator
        n = self._cardinality
        if n >= 0:
            n = max(0, (n - index + num_shards - 1) // num_shards)
        return self._then(lambda: itertools.islice(source(), index, None, num_shards), n)

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
        """This dataset (the data is already in memory).

        Args:
            filename: Accepted for TensorFlow compatibility; unused.
            name: Accepted for TensorFlow compatibility; unused.

        Returns:
            This Dataset.
        """
        return self

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
        return (_as_tensors(e) for e in self._make_iterator())

    def as_numpy_iterator(self):
        """Returns an iterator of the elements as NumPy arrays."""
        return iter(self._make_iterator())

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
        first = next(iter(self._make_iterator()), None)
        if first is None:
            raise ValueError("element_spec of an empty dataset is unknown in loopax.")

        def spec(a):
            shape = list(a.shape)
            if self._partial_batches and shape:
                shape[0] = None
            return TensorSpec(shape, a.dtype)
        return jax.tree_util.tree_map(spec, first)

    def __repr__(self):
        n = {INFINITE_CARDINALITY: "infinite", UNKNOWN_CARDINALITY: "unknown"}.get(
            self._cardinality, self._cardinality)
        return f"<loopax.tf.data.Dataset cardinality={n}>"


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


class _Experimental:
    AUTOTUNE = AUTOTUNE
    INFINITE_CARDINALITY = INFINITE_CARDINALITY
    UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY


experimental = _Experimental()

document_module(globals())
