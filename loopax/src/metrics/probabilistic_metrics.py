"""Crossentropy, KL divergence, Poisson and hinge metrics: running means of
the loss functions of the same names."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.losses import losses
from loopax.src.metrics.reduction_metrics import MeanMetricWrapper


class _LossMetric(MeanMetricWrapper):
    _direction = "down"


@export("loopax.metrics.BinaryCrossentropy")
class BinaryCrossentropy(_LossMetric):
    """Running mean of `binary_crossentropy`, one value per sample
    (`loopax.losses.binary_crossentropy`).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "binary_crossentropy").
        dtype: The dtype of its state and result; None is `floatx()`.
        from_logits: Whether `y_pred` holds logits rather than probabilities
            (default False).
        label_smoothing: Squeeze the labels towards uniform by this amount, in [0, 1]
            (default 0).
    """

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0):
        super().__init__(losses.binary_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing)


@export("loopax.metrics.CategoricalCrossentropy")
class CategoricalCrossentropy(_LossMetric):
    """Running mean of `categorical_crossentropy`, one value per sample
    (`loopax.losses.categorical_crossentropy`).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "categorical_crossentropy").
        dtype: The dtype of its state and result; None is `floatx()`.
        from_logits: Whether `y_pred` holds logits rather than probabilities
            (default False).
        label_smoothing: Squeeze the labels towards uniform by this amount, in [0, 1]
            (default 0).
        axis: The class axis (default -1).
    """

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0, axis=-1):
        super().__init__(losses.categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


@export("loopax.metrics.SparseCategoricalCrossentropy")
class SparseCategoricalCrossentropy(_LossMetric):
    """Running mean of `sparse_categorical_crossentropy`, one value per sample
    (`loopax.losses.sparse_categorical_crossentropy`).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "sparse_categorical_crossentropy").
        dtype: The dtype of its state and result; None is `floatx()`.
        from_logits: Whether `y_pred` holds logits rather than probabilities
            (default False).
        axis: The class axis (default -1).
    """

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 axis=-1):
        super().__init__(losses.sparse_categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, axis=axis)


@export("loopax.metrics.KLDivergence")
class KLDivergence(_LossMetric):
    """Running mean of `kl_divergence`, one value per sample (`loopax.losses.kl_divergence`).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "kl_divergence").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="kl_divergence", dtype=None):
        super().__init__(losses.kl_divergence, name=name, dtype=dtype)


@export("loopax.metrics.Poisson")
class Poisson(_LossMetric):
    """Running mean of `poisson`, one value per sample (`loopax.losses.poisson`).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "poisson").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="poisson", dtype=None):
        super().__init__(losses.poisson, name=name, dtype=dtype)


@export("loopax.metrics.Hinge")
class Hinge(_LossMetric):
    """Running mean of `hinge`, one value per sample (`loopax.losses.hinge`).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "hinge").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="hinge", dtype=None):
        super().__init__(losses.hinge, name=name, dtype=dtype)


@export("loopax.metrics.SquaredHinge")
class SquaredHinge(_LossMetric):
    """Running mean of `squared_hinge`, one value per sample (`loopax.losses.squared_hinge`).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "squared_hinge").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(losses.squared_hinge, name=name, dtype=dtype)


@export("loopax.metrics.CategoricalHinge")
class CategoricalHinge(_LossMetric):
    """Running mean of `categorical_hinge`, one value per sample
    (`loopax.losses.categorical_hinge`).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar.

    Args:
        name: The metric's name (default "categorical_hinge").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(losses.categorical_hinge, name=name, dtype=dtype)
