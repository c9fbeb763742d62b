"""Correlation metrics: per-sample Pearson and concordance correlation along
an axis, and their running means."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.losses.loss import EPSILON, squeeze_or_expand_to_same_rank
from loopax.src.metrics.metric import as_array
from loopax.src.metrics.reduction_metrics import MeanMetricWrapper
from loopax.src.tensor import op


def _prepare(y_true, y_pred):
    y_pred = as_array(y_pred)
    if not jnp.issubdtype(y_pred.dtype, jnp.floating):
        y_pred = y_pred.astype("float32")
    return squeeze_or_expand_to_same_rank(as_array(y_true, y_pred.dtype), y_pred)


@export("loopax.metrics.pearson_correlation")
@op
def pearson_correlation(y_true, y_pred, axis=-1):
    """Pearson's correlation of `y_true` and `y_pred` along `axis`: the mean
    product of their standardized values (population standard deviations;
    NaN where either is constant).

    Args:
        y_true: targets, of `y_pred`'s shape (or one rank less/more).
        y_pred: predictions, e.g. shape (batch, d).
        axis: the axis to correlate along (default the last).

    Returns:
        The correlation, with `axis` reduced: shape (batch,) for (batch, d).
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    t = y_true - jnp.mean(y_true, axis=axis, keepdims=True)
    p = y_pred - jnp.mean(y_pred, axis=axis, keepdims=True)
    t = t / jnp.std(t, axis=axis, keepdims=True)
    p = p / jnp.std(p, axis=axis, keepdims=True)
    return jnp.mean(t * p, axis=axis)


@export("loopax.metrics.concordance_correlation")
@op
def concordance_correlation(y_true, y_pred, axis=-1):
    """Lin's concordance correlation of `y_true` and `y_pred` along `axis`,
    2 cov / (var_true + var_pred + (mean_true - mean_pred)^2): 1 only when
    the two agree exactly, lower for a shift or scale Pearson ignores.
    An epsilon (1e-7) keeps constant inputs finite.

    Args:
        y_true: targets, of `y_pred`'s shape (or one rank less/more).
        y_pred: predictions, e.g. shape (batch, d).
        axis: the axis to compare along (default the last).

    Returns:
        The coefficient, with `axis` reduced: shape (batch,) for (batch, d).
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    mean_true = jnp.mean(y_true, axis=axis, keepdims=True)
    mean_pred = jnp.mean(y_pred, axis=axis, keepdims=True)
    var_true = jnp.var(y_true, axis=axis, keepdims=True)
    var_pred = jnp.var(y_pred, axis=axis, keepdims=True)
    norm = var_true + var_pred + jnp.square(mean_true - mean_pred)
    # The mean of these products along `axis` is the covariance.
    products = (y_true - mean_true) * (y_pred - mean_pred)
    return jnp.mean(2 * products / (norm + EPSILON), axis=axis)


@export("loopax.metrics.PearsonCorrelation")
class PearsonCorrelation(MeanMetricWrapper):
    """The running mean of `pearson_correlation(y_true, y_pred, axis)`: each
    sample's correlation along `axis`, averaged (weighted by `sample_weight`)
    over samples and batches.

    Args:
        name: the metric's name. dtype: its state's and result's dtype.
        axis: the axis each correlation runs along (default the last).

    Returns:
        `result()`: a scalar of `dtype`.
    """

    def __init__(self, name="pearson_correlation", dtype=None, axis=-1):
        super().__init__(pearson_correlation, name=name, dtype=dtype, axis=axis)
        self.axis = axis
        self._direction = "up"


@export("loopax.metrics.ConcordanceCorrelation")
class ConcordanceCorrelation(MeanMetricWrapper):
    """The running mean of `concordance_correlation(y_true, y_pred, axis)`:
    each sample's coefficient along `axis`, averaged (weighted by
    `sample_weight`) over samples and batches.

    Args:
        name: the metric's name. dtype: its state's and result's dtype.
        axis: the axis each coefficient runs along (default the last).

    Returns:
        `result()`: a scalar of `dtype`.
    """

    def __init__(self, name="concordance_correlation", dtype=None, axis=-1):
        super().__init__(concordance_correlation, name=name, dtype=dtype, axis=axis)
        self.axis = axis
        self._direction = "up"
