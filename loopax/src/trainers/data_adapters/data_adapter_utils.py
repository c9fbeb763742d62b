"""Helpers shared by the data adapters: packing `(x, y, sample_weight)`,
turning inputs into NumPy leaves, length checks, class weights, splits."""

from __future__ import annotations

import operator
import warnings
from typing import Any

import jax
import numpy as np

from loopax.src import dtypes
from loopax.src.api_export import export


@export("loopax.utils.unpack_x_y_sample_weight")
def unpack_x_y_sample_weight(data: Any) -> tuple[Any, Any, Any]:
    """`(x, y, sample_weight)` from a batch: `x`, `(x,)`, `(x, y)` or `(x, y, sw)`.

    A list is read as a tuple (Keras's rule); missing parts are None.

    Args:
        data: One batch as a dataset or generator yields it: `x` alone (an
            array or dict), or a tuple/list of 1 to 3 elements.

    Returns:
        The tuple `(x, y, sample_weight)`, with None for the parts `data`
        does not hold.

    Raises:
        ValueError: `data` is an empty tuple or list, or one of more than 3
            elements.
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError(
        "A batch must be `x`, `(x,)`, `(x, y)` or `(x, y, sample_weight)`; got a "
        f"tuple of {len(data)} elements. Wrap several inputs in a list or dict: "
        "`([x1, x2], y)`.")


@export("loopax.utils.pack_x_y_sample_weight")
def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """The inverse of `unpack_x_y_sample_weight`: the shortest tuple (or `x`).

    Args:
        x: The inputs.
        y: The targets, or None.
        sample_weight: The sample weights, or None (ignored when `y` is None).

    Returns:
        `x` when `y` is None (`(x,)` when `x` is a list or tuple, so that it
        is not read as `(x, y)`), else `(x, y)`, or `(x, y, sample_weight)`
        when `sample_weight` is given.
    """
    if y is None:
        return x if not isinstance(x, (list, tuple)) else (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def is_pandas(cls: type) -> bool:
    """Whether `cls` is a pandas type (DataFrame, Series): of the type, not the data."""
    return cls.__module__.startswith("pandas") and hasattr(cls, "to_numpy")


def _is_number_list(x: Any) -> bool:
    """A (nested) list of plain numbers: one array, not several inputs."""
    if not isinstance(x, (list, tuple)) or not x:
        return False
    return all(isinstance(e, (int, float, bool, np.number)) or _is_number_list(e) for e in x)


def to_array(x: Any, where: str = "x") -> np.ndarray | jax.Array:
    """One input leaf as a NumPy (or JAX) array with loopax's dtypes:
    float64 -> floatx, int64 -> int32."""
    if is_pandas(type(x)):
        x = x.to_numpy()
    elif isinstance(x, (list, tuple)) and _is_number_list(x):
        x = _number_list_array(x, where)
    elif isinstance(x, (int, float, bool, np.number)):
        x = np.asarray(x)
    elif not isinstance(x, (np.ndarray, jax.Array)):
        if hasattr(x, "numpy") and callable(x.numpy):   # TF/torch tensors
            x = x.numpy()
        try:
            x = np.asarray(x)
        except Exception as e:  # any failure means "not array data"
            raise TypeError(f"`{where}`: cannot use a {type(x).__name__} as array data "
                            f"({e}). Pass NumPy arrays, lists/dicts of them, pandas "
                            "objects, a generator or a PyDataset.") from None
    if x.dtype.kind in "SU" or (x.dtype == object and x.size and all(
            isinstance(v, (str, bytes)) for v in x.flat)):
        raise TypeError(
            f"`{where}` holds strings (dtype {x.dtype}); models compute on numbers only. "
            "Encode the strings first: e.g. class names to integer ids with "
            "`ids = np.unique(y, return_inverse=True)[1]`, text with a tokenizer or "
            "keras.layers.StringLookup / TextVectorization in the input pipeline "
            "(`ds.map(lambda x, y: (vectorize_layer(x), y))`; loopax runs no string layer "
            "inside a model's compiled step).")
    if x.dtype == object:
        raise TypeError(f"`{where}` holds Python objects (dtype=object), not numbers. "
                        "Convert it to a numeric array first, e.g. np.asarray(x, 'float32').")
    if x.dtype == np.float64:
        x = x.astype(dtypes.floatx())
    elif x.dtype == np.int64 and isinstance(x, np.ndarray) and _fits_int32(x):
        # values int32 cannot hold stay int64 here, so that the label checks see them
        # as given (2**40 is not class 0); JAX converts them as it converts any int64
        x = x.astype(np.int32)
    elif x.dtype == np.uint64 and isinstance(x, np.ndarray) and (
            x.size == 0 or x.max() <= np.iinfo(np.uint32).max):
        x = x.astype(np.uint32)
    return x


def _number_list_array(x: list | tuple, where: str) -> np.ndarray:
    """`np.asarray(x)` of a nested list of numbers; a ragged one (rows of different
    lengths) refused naming `where` and the fix, not with NumPy's error."""
    try:
        return np.asarray(x)
    except ValueError:
        lengths = sorted({len(row) for row in x if isinstance(row, (list, tuple))})
        raise ValueError(
            f"`{where}` is a ragged list: its rows have different lengths ({lengths[:10]}), "
            "and a batch needs rows of one length. Pass np.array(...) of equal-length rows, "
            "or pad them to one length first, e.g. keras.utils.pad_sequences(rows, "
            "padding='post').") from None


def _fits_int32(x: np.ndarray) -> bool:
    return x.size == 0 or (x.min() >= np.iinfo(np.int32).min and
                           x.max() <= np.iinfo(np.int32).max)


def to_arrays(tree: Any, where: str = "x") -> Any:
    """`tree` (array, pandas object, list/tuple/dict of them) with array leaves."""
    if tree is None:
        return None
    if isinstance(tree, dict):
        return {k: to_arrays(v, f"{where}[{k!r}]") for k, v in tree.items()}
    if isinstance(tree, (list, tuple)) and not _is_number_list(tree):
        return type(tree)(to_arrays(v, f"{where}[{i}]") for i, v in enumerate(tree))
    return to_array(tree, where)


def batch_size_of(tree: Any, default: int = 1) -> int:
    """The first dimension of the first leaf of `tree` that has one (`default`
    when none has). Arrays, Variables and tape Tensors are leaves (a followed
    Tensor must not be flattened)."""
    for leaf in jax.tree_util.tree_leaves(tree, is_leaf=lambda a: hasattr(a, "shape")):
        shape = getattr(leaf, "shape", None)
        if shape:
            return shape[0]
    return default


def shape_signature(tree: Any) -> tuple[Any, tuple[tuple[tuple[int, ...], str], ...]]:
    """`(tree structure, ((shape, dtype), ...))` of a batch: equal for batches that
    one compiled program (and one check) serves."""
    flat, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((tuple(np.shape(a)), str(getattr(a, "dtype", type(a)))) for a in flat)


def num_samples(x: Any, y: Any = None, sample_weight: Any = None) -> int:
    """The shared first dimension of every array, or a clear error."""
    sizes = []
    for name, part in (("x", x), ("y", y), ("sample_weight", sample_weight)):
        for path, leaf in jax.tree_util.tree_leaves_with_path(part):
            shape = np.shape(leaf)
            if not shape:
                raise ValueError(f"`{name}{jax.tree_util.keystr(path)}` is a scalar; "
                                 "array data needs a first (sample) dimension.")
            sizes.append((name + jax.tree_util.keystr(path), shape[0]))
    if not sizes:
        raise ValueError("`x` holds no arrays. Pass the training data as x=...")
    counts = {n for _, n in sizes}
    if len(counts) > 1:
        listing = ", ".join(f"{name} has {n}" for name, n in sizes)
        raise ValueError(
            f"x, y and sample_weight must have the same number of samples (first "
            f"dimension), but {listing}. Pass arrays of equal length.")
    n = sizes[0][1]
    if n == 0:
        raise ValueError("The dataset is empty (0 samples). Pass at least one sample.")
    return n


def standardize(x: Any, y: Any = None, sample_weight: Any = None,
                class_weight: dict | None = None) -> tuple[tuple[Any, Any, Any], int]:
    """`(x, y, sample_weight)` with array leaves (`to_arrays`) and `class_weight` folded
    into the sample weights, and the number of samples they share (`num_samples`)."""
    x, y, sample_weight = (to_arrays(part, name) for part, name in (
        (x, "x"), (y, "y"), (sample_weight, "sample_weight")))
    n = num_samples(x, y, sample_weight)
    if class_weight is not None and y is not None:
        sample_weight = class_weight_to_sample_weight(y, class_weight, sample_weight)
    return (x, y, sample_weight), n


def class_weight_to_sample_weight(
        y: Any, class_weight: dict[int, float], sample_weight: Any = None) -> np.ndarray:
    """Per-sample weights `class_weight[class of y]` (times `sample_weight`).

    `y` holds class indices, shape (n,) or (n, 1), or one-hot rows (n, classes).
    """
    if isinstance(y, (list, tuple, dict)):
        raise ValueError(
            "`class_weight` is only supported for models with a single output; pass "
            "per-output `sample_weight` instead.")
    if not isinstance(class_weight, dict):
        raise TypeError(f"`class_weight` must be a dict {{class_index: weight}}, got "
                        f"{type(class_weight).__name__}.")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] > 1:
        classes = np.argmax(y, axis=-1)
    elif y.ndim == 2 and y.shape[1] == 1:
        classes = y[:, 0]
        if np.issubdtype(classes.dtype, np.floating):
            classes = np.round(classes)  # binary targets as floats
    else:
        classes = y
    classes = classes.astype(np.int64)
    top = int(max(class_weight)) + 1 if class_weight else 0
    table = np.ones(max(top, int(classes.max(initial=0)) + 1), np.float32)
    for cls, weight in class_weight.items():
        if int(cls) < 0:
            raise ValueError(f"`class_weight` keys must be class indices >= 0, got {cls!r}.")
        table[int(cls)] = weight
    _warn_unweighted_classes(classes, class_weight)
    weights = table[classes]
    if sample_weight is not None:
        per_sample = np.asarray(sample_weight, np.float32).reshape(len(weights), -1)[:, 0]
        weights = weights * per_sample
    return weights.astype(np.float32)


_warned_unweighted: set = set()   # (class_weight items, class): each warned about once


def _warn_unweighted_classes(classes, class_weight):
    """Keras gives a class missing from `class_weight` the weight 1.0, silently;
    loopax does the same and says so, once per class_weight and class."""
    weighted = {int(c) for c in class_weight}
    items = frozenset((int(c), float(w)) for c, w in class_weight.items())
    missing = [int(c) for c in np.unique(classes)
               if int(c) not in weighted and (items, int(c)) not in _warned_unweighted]
    if not missing:
        return
    _warned_unweighted.update((items, c) for c in missing)
    plural = "es" if len(missing) > 1 else ""
    warnings.warn(
        f"`class_weight` {dict(sorted(class_weight.items()))} has no weight for class{plural} "
        f"{', '.join(map(str, missing))}, present in the labels: those samples get weight "
        f"1.0 (as in Keras). If that is not intended, add "
        f"{', '.join(f'{c}: <weight>' for c in missing)} to `class_weight`.",
        UserWarning, stacklevel=4)


def slice_arrays(tree: Any, start: int | None, stop: int | None) -> Any:
    return jax.tree_util.tree_map(operator.itemgetter(slice(start, stop)), tree)


def train_validation_split(arrays: Any, validation_split: float) -> tuple[Any, Any]:
    """Splits every array into the first `1 - validation_split` (training)
    and the last `validation_split` (validation), as Keras does (no shuffle)."""
    if not 0.0 < validation_split < 1.0:
        raise ValueError(f"`validation_split` must be in (0, 1), got {validation_split}.")
    n = num_samples(arrays)
    split_at = int(np.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(
            f"validation_split={validation_split} of {n} samples leaves "
            f"{split_at} for training and {n - split_at} for validation; both need at "
            "least one. Use a different split or more data.")
    return slice_arrays(arrays, 0, split_at), slice_arrays(arrays, split_at, n)
