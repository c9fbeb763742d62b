"""Accuracy metrics: running means of per-sample 0/1 matches. The functions are
loopax ops (as Keras builds them from its ops), so they also run on symbolic
tensors in a functional model."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src import dtypes
from loopax.src.api_export import export
from loopax.src.losses.loss import squeeze_or_expand_to_same_rank
from loopax.src.losses.losses import elementwise
from loopax.src.metrics.metric import as_array
from loopax.src.metrics.reduction_metrics import MeanMetricWrapper
from loopax.src.tensor import op


def _float_pair(y_true, y_pred):
    y_pred = as_array(y_pred)
    y_true = as_array(y_true, y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def _matches(a, b):
    return (a == b).astype(dtypes.floatx())


@export("loopax.metrics.accuracy")
@elementwise
@op
def accuracy(y_true, y_pred):
    """mean(y_true == y_pred, axis=-1): exact equality.

    Args:
        y_true: Labels, `(batch, ..., d)` (or `(batch,)`).
        y_pred: Predictions of the same shape.

    Returns:
        Per-sample accuracies, shape `(batch, ...)` (the last axis reduced), in
        `floatx()`.
    """
    y_true, y_pred = _float_pair(y_true, y_pred)
    return jnp.mean(_matches(y_true, y_pred), axis=-1)


@export("loopax.metrics.binary_accuracy")
@elementwise
@op
def binary_accuracy(y_true, y_pred, threshold=0.5):
    """mean(y_true == (y_pred > threshold), axis=-1).

    Args:
        y_true: 0/1 labels, `(batch, ..., d)` (or `(batch,)`).
        y_pred: Probabilities of the same shape.
        threshold: Predictions above it count as 1 (default 0.5).

    Returns:
        Per-sample accuracies, shape `(batch, ...)` (the last axis reduced), in
        `floatx()`.
    """
    y_true, y_pred = _float_pair(y_true, y_pred)
    predicted = (y_pred > threshold).astype(y_true.dtype)
    return jnp.mean(_matches(y_true, predicted), axis=-1)


def _integer_labels(y_true, y_pred):
    """Labels of y_pred's shape without the class axis (trailing 1 squeezed)."""
    y_true = as_array(y_true)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = jnp.squeeze(y_true, -1)
    if y_true.shape != y_pred.shape[:-1]:
        raise ValueError(
            f"Integer labels of shape {tuple(y_true.shape)} do not fit predictions of "
            f"shape {tuple(y_pred.shape)}: expected labels of shape "
            f"{tuple(y_pred.shape[:-1])} (or with a trailing 1).")
    return y_true


@export("loopax.metrics.categorical_accuracy")
@op
def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_true) == argmax(y_pred) over the last axis.

    Args:
        y_true: One-hot labels, `(batch, ..., classes)`.
        y_pred: Scores of the same shape.

    Returns:
        0/1 per sample, shape `(batch, ...)`, in `floatx()`.

    Raises:
        ValueError: the shapes differ (integer labels need
            `sparse_categorical_accuracy`).
    """
    y_true, y_pred = as_array(y_true), as_array(y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"categorical_accuracy: y_true has shape {tuple(y_true.shape)} but y_pred "
            f"{tuple(y_pred.shape)}; one-hot labels must match. For integer labels "
            "use sparse_categorical_accuracy.")
    return _matches(jnp.argmax(y_true, -1), jnp.argmax(y_pred, -1))


@export("loopax.metrics.sparse_categorical_accuracy")
@op
def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the integer label equals argmax(y_pred) over the last axis.

    Args:
        y_true: Integer labels, `(batch, ...)` or `(batch, ..., 1)`.
        y_pred: Scores, `(batch, ..., classes)`.

    Returns:
        0/1 per sample, shape `(batch, ...)`, in `floatx()`.

    Raises:
        ValueError: the label shape does not fit the predictions'.
    """
    y_pred = as_array(y_pred)
    labels = _integer_labels(y_true, y_pred)
    predicted = jnp.argmax(y_pred, -1).astype(labels.dtype)
    return _matches(labels, predicted)


def _in_top_k(labels, y_pred, k):
    """Whether the label's score is among the k largest (ties count as in)."""
    labels = labels.astype(jnp.int32)
    score = jnp.take_along_axis(y_pred, labels[..., None], axis=-1)
    return jnp.sum(y_pred > score, axis=-1) < k


@export("loopax.metrics.top_k_categorical_accuracy")
@op
def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the one-hot label's class is among the k highest scores.

    Args:
        y_true: One-hot labels, `(batch, classes)`.
        y_pred: Scores of the same shape.
        k: How many of the highest scores count (default 5; ties count as in).

    Returns:
        0/1 per sample, shape `(batch,)`, in `floatx()`.
    """
    y_true, y_pred = as_array(y_true), as_array(y_pred)
    return _in_top_k(jnp.argmax(y_true, -1), y_pred, k).astype(dtypes.floatx())


@export("loopax.metrics.sparse_top_k_categorical_accuracy")
@op
def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False):
    """1.0 where the integer label is among the k highest scores.

    With `from_sorted_ids`, y_pred holds the predicted class ids, best first.

    Args:
        y_true: Integer labels, `(batch,)` or `(batch, 1)`.
        y_pred: Scores `(batch, classes)`, or class ids `(batch, n)` with
            `from_sorted_ids`.
        k: How many of the highest scores count (default 5; ties count as in).
        from_sorted_ids: Whether `y_pred` holds sorted class ids (default False).

    Returns:
        0/1 per sample, shape `(batch,)`, in `floatx()`.

    Raises:
        ValueError: the label shape does not fit the predictions'.
    """
    y_pred = as_array(y_pred)
    labels = _integer_labels(y_true, y_pred)
    if from_sorted_ids:
        hit = jnp.any(y_pred[..., :k] == labels[..., None].astype(y_pred.dtype), axis=-1)
    else:
        hit = _in_top_k(labels, y_pred, k)
    return hit.astype(dtypes.floatx())


class _AccuracyMetric(MeanMetricWrapper):
    _direction = "up"


@export("loopax.metrics.Accuracy")
class Accuracy(_AccuracyMetric):
    """How often predictions equal labels exactly.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "accuracy").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


@export("loopax.metrics.BinaryAccuracy")
class BinaryAccuracy(_AccuracyMetric):
    """How often (y_pred > threshold) equals the 0/1 label.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "binary_accuracy").
        dtype: The dtype of its state and result; None is `floatx()`.
        threshold: Predictions above it count as 1 (default 0.5).
    """

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)


@export("loopax.metrics.CategoricalAccuracy")
class CategoricalAccuracy(_AccuracyMetric):
    """How often the argmax of y_pred is the class of the one-hot label.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "categorical_accuracy").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


@export("loopax.metrics.SparseCategoricalAccuracy")
class SparseCategoricalAccuracy(_AccuracyMetric):
    """How often the argmax of y_pred equals the integer label.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "sparse_categorical_accuracy").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


@export("loopax.metrics.TopKCategoricalAccuracy")
class TopKCategoricalAccuracy(_AccuracyMetric):
    """How often the one-hot label's class is among the `k` highest scores.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        k: How many of the highest scores count (default 5).
        name: The metric's name (default "top_k_categorical_accuracy").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)


@export("loopax.metrics.SparseTopKCategoricalAccuracy")
class SparseTopKCategoricalAccuracy(_AccuracyMetric):
    """How often the integer label is among the `k` highest scores.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        k: How many of the highest scores count (default 5).
        name: The metric's name (default "sparse_top_k_categorical_accuracy").
        dtype: The dtype of its state and result; None is `floatx()`.
        from_sorted_ids: Whether `y_pred` holds class ids, best first (default False).
    """

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None,
                 from_sorted_ids=False):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k,
                         from_sorted_ids=from_sorted_ids)
