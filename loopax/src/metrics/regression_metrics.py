"""Regression metrics: running means of per-sample errors, and their root."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src.losses import losses
from loopax.src.losses.loss import squeeze_or_expand_to_same_rank
from loopax.src.metrics.metric import as_array
from loopax.src.metrics.reduction_metrics import Mean, MeanMetricWrapper


class MeanSquaredError(MeanMetricWrapper):
    """Running mean of mean((y_true - y_pred)**2, axis=-1).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "mean_squared_error").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(losses.mean_squared_error, name=name, dtype=dtype)
        self._direction = "down"


class MeanAbsoluteError(MeanMetricWrapper):
    """Running mean of mean(|y_true - y_pred|, axis=-1).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "mean_absolute_error").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(losses.mean_absolute_error, name=name, dtype=dtype)
        self._direction = "down"


class MeanAbsolutePercentageError(MeanMetricWrapper):
    """Running mean of 100 * mean(|(y_true - y_pred) / y_true|, axis=-1).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "mean_absolute_percentage_error").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(losses.mean_absolute_percentage_error, name=name, dtype=dtype)
        self._direction = "down"


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    """Running mean of mean((log(1 + y_pred) - log(1 + y_true))**2, axis=-1).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "mean_squared_logarithmic_error").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(losses.mean_squared_logarithmic_error, name=name, dtype=dtype)
        self._direction = "down"


class LogCoshError(MeanMetricWrapper):
    """Running mean of mean(log(cosh(y_pred - y_true)), axis=-1).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "logcosh").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="logcosh", dtype=None):
        super().__init__(losses.log_cosh, name=name, dtype=dtype)
        self._direction = "down"


def cosine_similarity(y_true, y_pred, axis=-1):
    """sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): 1 when aligned.

    Args:
        y_true: Vectors, `(batch, ..., d)`.
        y_pred: Vectors of the same shape.
        axis: The axis of the vectors (default -1).

    Returns:
        Per-sample similarities in [-1, 1], `axis` reduced.
    """
    return -losses.cosine_similarity.__loopax_op__(y_true, y_pred, axis=axis)


class CosineSimilarity(MeanMetricWrapper):
    """Running mean of the cosine similarity of y_true and y_pred along `axis`.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "cosine_similarity").
        dtype: The dtype of its state and result; None is `floatx()`.
        axis: The axis of the vectors (default -1).
    """

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(cosine_similarity, name=name, dtype=dtype, axis=axis)
        self._direction = "up"


class RootMeanSquaredError(Mean):
    """sqrt of the running mean of (y_true - y_pred)**2 over all elements of
    each sample (weighted per sample).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "root_mean_squared_error").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._direction = "down"

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = as_array(y_true, self.dtype)
        y_pred = as_array(y_pred, self.dtype)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        super().update_state(jnp.square(y_pred - y_true), sample_weight=sample_weight)

    def result(self):
        return jnp.sqrt(super().result())
