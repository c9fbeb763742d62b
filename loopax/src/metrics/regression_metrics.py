"""Regression metrics: running means of per-sample errors, their root, and R2."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.losses import losses
from loopax.src.losses.loss import squeeze_or_expand_to_same_rank
from loopax.src.metrics.metric import Metric, as_array
from loopax.src.metrics.reduction_metrics import Mean, MeanMetricWrapper


@export("loopax.metrics.MeanSquaredError")
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


@export("loopax.metrics.MeanAbsoluteError")
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


@export("loopax.metrics.MeanAbsolutePercentageError")
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


@export("loopax.metrics.MeanSquaredLogarithmicError")
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


@export("loopax.metrics.LogCoshError")
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


@export("loopax.metrics.cosine_similarity")
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


@export("loopax.metrics.CosineSimilarity")
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


@export("loopax.metrics.RootMeanSquaredError")
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


_R2_AGGREGATIONS = (None, "uniform_average", "variance_weighted_average")


@export("loopax.metrics.R2Score")
class R2Score(Metric):
    """The coefficient of determination, 1 - SS_res / SS_tot, of each output
    column of (batch, outputs) regression targets, over all batches.

    Running weighted sums of y, y^2, the squared residuals and the weights
    give each column's score; an infinite score (a constant column with
    residuals) counts as 0. With `num_regressors` p > 0 the adjusted score
    1 - (1 - R2) (n - 1) / (n - p - 1) is returned, n counting every entry
    seen (as Keras), unless n - 1 <= p (then the plain score, with a warning
    when computed eagerly).

    Args:
        class_aggregation: "uniform_average" (the mean over columns),
            "variance_weighted_average" (weighted by each column's SS_tot) or
            None (one score per column).
        num_regressors: p, the number of independent variables; 0 for the
            plain score.
        name: the metric's name. dtype: its state's and result's dtype.

    Returns:
        `result()`: a scalar, or shape (outputs,) with `class_aggregation=None`.

    Raises:
        ValueError: an unknown `class_aggregation`, a negative
            `num_regressors`, or inputs that are not 2-D.
    """

    def __init__(self, class_aggregation="uniform_average", num_regressors=0,
                 name="r2_score", dtype=None):
        if class_aggregation not in _R2_AGGREGATIONS:
            raise ValueError(f"R2Score: `class_aggregation` must be one of {_R2_AGGREGATIONS}, "
                             f"got {class_aggregation!r}.")
        if num_regressors < 0:
            raise ValueError(f"R2Score: `num_regressors` must be >= 0, got {num_regressors}.")
        super().__init__(name=name, dtype=dtype)
        self._direction = "up"
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self.num_samples = self.add_variable((), "zeros", name="num_samples")
        self._built = False

    def build_from_shapes(self, y_true_shape, y_pred_shape):
        """Creates the per-column state for `y_pred_shape[-1]` outputs: on the
        first update, or earlier when `compile` sees the output's shape."""
        if self._built:
            return
        if len(y_true_shape) != 2 or len(y_pred_shape) != 2:
            raise ValueError(
                f"R2Score expects y_true and y_pred of shape (batch, outputs); got y_true "
                f"{tuple(y_true_shape)} and y_pred {tuple(y_pred_shape)}. Reshape "
                "single-output targets to (batch, 1).")
        columns = (int(y_pred_shape[-1]),)
        self.squared_sum = self.add_variable(columns, "zeros", name="squared_sum")
        self.sum = self.add_variable(columns, "zeros", name="sum")
        self.total_mse = self.add_variable(columns, "zeros", name="residual")
        self.count = self.add_variable(columns, "zeros", name="count")
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds one batch.

        Args:
            y_true: targets of shape (batch, outputs).
            y_pred: predictions of shape (batch, outputs).
            sample_weight: optional weights of shape (batch,) or (batch, outputs).
        """
        y_true, y_pred = squeeze_or_expand_to_same_rank(as_array(y_true, self.dtype),
                                                        as_array(y_pred, self.dtype))
        self.build_from_shapes(y_true.shape, y_pred.shape)
        weight = jnp.ones((), self.dtype) if sample_weight is None \
            else as_array(sample_weight, self.dtype)
        if weight.ndim == 1:
            weight = weight[:, None]
        weight = jnp.broadcast_to(weight, y_true.shape)
        self.sum.assign_add(jnp.sum(weight * y_true, axis=0))
        self.squared_sum.assign_add(jnp.sum(weight * jnp.square(y_true), axis=0))
        self.total_mse.assign_add(jnp.sum(weight * jnp.square(y_true - y_pred), axis=0))
        self.count.assign_add(jnp.sum(weight, axis=0))
        self.num_samples.assign_add(jnp.asarray(y_true.size, self.dtype))

    def result(self):
        if not self._built:
            return jnp.zeros((), self.dtype)
        total = self.squared_sum.value - self.sum.value * (self.sum.value / self.count.value)
        scores = 1 - self.total_mse.value / total
        scores = jnp.where(jnp.isinf(scores), 0.0, scores)
        if self.class_aggregation == "uniform_average":
            score = jnp.mean(scores)
        elif self.class_aggregation == "variance_weighted_average":
            score = jnp.sum(total * scores) / jnp.sum(total)
        else:
            score = scores
        if not self.num_regressors:
            return score
        n, p = self.num_samples.value, float(self.num_regressors)
        _warn_if_unadjustable(n, p)
        adjusted = 1 - (1 - score) * (n - 1) / (n - p - 1)
        return jnp.where(p < n - 1, adjusted, score)

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}


def _warn_if_unadjustable(n, p):
    """Warns (when `n` is concrete) that the adjusted R2 falls back to R2."""
    if isinstance(n, jax.core.Tracer):
        return
    if p > n - 1:
        warnings.warn("R2Score: more regressors (num_regressors) than samples; returning "
                      "the unadjusted R2 score.", stacklevel=3)
    elif p == n - 1:
        warnings.warn("R2Score: num_regressors == samples - 1 divides by zero in the "
                      "adjusted R2 score; returning the unadjusted one.", stacklevel=3)
