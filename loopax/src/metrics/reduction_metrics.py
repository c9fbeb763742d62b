"""`Sum`, `Mean` and `MeanMetricWrapper`: running (weighted) sums and means."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src import losses
from loopax.src.api_export import export
from loopax.src.layers.masking import get_keras_mask
from loopax.src.losses.loss import squeeze_or_expand_to_same_rank
from loopax.src.losses.losses import is_elementwise
from loopax.src.metrics.metric import Metric, as_array


def reduce_to_samplewise_values(values, sample_weight, reduce_fn, dtype):
    """(values of shape (batch,) or (), weights of shape (batch,) or None).

    Values are first reduced over the axes the weight does not have, then
    weighted; a weight with extra axes is reduced the same way, so a weighted
    mean stays sum(w * v) / sum(w).
    """
    values = as_array(values, dtype)
    if sample_weight is not None:
        sample_weight = as_array(sample_weight, dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        w_ndim, v_ndim = sample_weight.ndim, values.ndim
        if v_ndim > w_ndim:
            values = reduce_fn(values, axis=tuple(range(w_ndim, v_ndim)))
        try:
            sample_weight = jnp.broadcast_to(sample_weight, values.shape)
        except ValueError:
            raise ValueError(
                f"sample_weight of shape {tuple(sample_weight.shape)} does not fit values "
                f"of shape {tuple(values.shape)}: pass one weight per sample.") from None
        values = values * sample_weight
        if w_ndim > 1:
            sample_weight = reduce_fn(sample_weight, axis=tuple(range(1, w_ndim)))
    if values.ndim > 1:
        values = reduce_fn(values, axis=tuple(range(1, values.ndim)))
    return values, sample_weight


def divide_no_nan(x, y):
    """x / y, and 0 where y == 0."""
    safe = jnp.where(y == 0, jnp.ones_like(y), y)
    return jnp.where(y == 0, jnp.zeros_like(x / safe), x / safe)


@export("loopax.metrics.Sum")
class Sum(Metric):
    """The running (weighted) sum of the values passed to
    `update_state(values, sample_weight=None)`.

    `result()` is a scalar.

    Args:
        name: The metric's name (default "sum").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), "zeros", name="total")

    def update_state(self, values, sample_weight=None):
        values, _ = reduce_to_samplewise_values(values, sample_weight, jnp.sum, self.dtype)
        self.total.assign_add(jnp.sum(values))

    def result(self):
        return self.total.value


@export("loopax.metrics.Mean")
class Mean(Metric):
    """The running (weighted) mean of the values passed to `update_state`.

    Each sample counts once: values of shape (batch, d) are averaged over d
    first. `sample_weight` of shape (batch,) weights the samples.

    `update_state(values, sample_weight=None)`; `result()` is a scalar (0 before any
    update).

    Args:
        name: The metric's name (default "mean").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), "zeros", name="total")
        self.count = self.add_variable((), "zeros", name="count")

    def update_state(self, values, sample_weight=None):
        values, sample_weight = reduce_to_samplewise_values(values, sample_weight, jnp.mean,
                                                            self.dtype)
        self.total.assign_add(jnp.sum(values))
        if sample_weight is not None:
            count = jnp.sum(sample_weight)
        else:
            count = values.shape[0] if values.ndim >= 1 else 1
        self.count.assign_add(jnp.asarray(count, self.dtype))

    def result(self):
        return divide_no_nan(self.total.value, self.count.value)


@export("loopax.metrics.MeanMetricWrapper")
class MeanMetricWrapper(Mean):
    """The running mean of `fn(y_true, y_pred, **kwargs)`, a per-sample function.

    `update_state(y_true, y_pred, sample_weight=None)`. When `fn` works
    element by element (see `loopax.src.losses.losses.elementwise`: MSE, MAE,
    the binary accuracies, ...), labels and predictions of shape (batch,) are treated as
    (batch, 1), so each sample counts once, even in a short last batch or
    with sample weights (Keras would average such a batch into one value).

    Args:
        fn: `fn(y_true, y_pred, **kwargs)` -> per-sample values.
        name: The metric's name; None is Keras's automatic one (`mean_metric_wrapper`,
            `mean_metric_wrapper_1`, ...).
        dtype: The dtype of its state and result; None is `floatx()`.
        **kwargs: Passed to `fn` on every update.

    Raises:
        TypeError: `fn` is not callable.
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"MeanMetricWrapper: `fn` must be callable, got {fn!r}.")
        super().__init__(name=name, dtype=dtype)
        self._fn = getattr(fn, "__loopax_op__", fn)
        self._elementwise = is_elementwise(fn)
        self._fn_kwargs = kwargs
        if fn in losses.ALL_OBJECTS.values():
            self._direction = "down"

    def update_state(self, y_true, y_pred, sample_weight=None):
        mask = get_keras_mask(y_pred)   # padding of y_pred does not count (as Keras)
        if mask is not None:
            mask = as_array(mask, self.dtype)
            if sample_weight is None:
                sample_weight = mask
            else:
                mask, sample_weight = squeeze_or_expand_to_same_rank(
                    mask, as_array(sample_weight, self.dtype))
                sample_weight = sample_weight * mask
        y_true, y_pred = as_array(y_true), as_array(y_pred)
        if self._elementwise and y_true.ndim == 1 and y_pred.ndim == 1:
            # One value per sample: keep each sample a row, so `fn`'s mean
            # over the last axis does not average the batch into one value.
            y_true, y_pred = y_true[:, None], y_pred[:, None]
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        super().update_state(values, sample_weight=sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        if type(self) is MeanMetricWrapper:
            config["fn"] = getattr(self._fn, "__name__", self._fn)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if cls is MeanMetricWrapper and isinstance(config.get("fn"), str):
            config["fn"] = losses.get(config["fn"])
        return cls(**config)
