"""F-beta and F1 scores: per-class counts of one thresholded prediction per
entry, from the shared confusion-matrix counting (`metrics_utils`)."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.losses.loss import EPSILON
from loopax.src.metrics import metrics_utils
from loopax.src.metrics.metric import Metric, as_array

_AVERAGES = (None, "micro", "macro", "weighted")


@export("loopax.metrics.FBetaScore")
class FBetaScore(Metric):
    """The F-beta score, (1 + beta^2) * P * R / (beta^2 * P + R), of
    multi-class or multi-label predictions of shape (batch, classes).

    A prediction counts as positive where it is above `threshold`, or, with
    `threshold=None`, where it is its row's maximum (and not 0). Labels
    (batch, classes) weigh in by value: a label y adds y to the positives
    and 1 - y to the negatives. Precision P and recall R carry an epsilon
    (1e-7) in their denominators, as Keras's.

    Args:
        average: None (one score per class, shape (classes,)), "micro" (one
            score from the counts summed over classes), "macro" (the mean of
            the class scores) or "weighted" (their mean weighted by each
            class's label total).
        beta: how many times recall counts as much as precision; a float > 0.
        threshold: a float in (0, 1], or None for the row's maximum.
        name: the metric's name. dtype: its state's and result's dtype.

    Returns:
        `result()`: shape (classes,) with `average=None`, else a scalar.

    Raises:
        ValueError: an unknown `average`, `beta` not a float > 0, `threshold`
            not a float in (0, 1], or inputs that are not 2-D.
    """

    _direction = "up"

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score",
                 dtype=None):
        cls = type(self).__name__
        if average not in _AVERAGES:
            raise ValueError(f"{cls}: `average` must be one of {_AVERAGES}, got {average!r}.")
        if not isinstance(beta, float) or beta <= 0.0:
            raise ValueError(f"{cls}: `beta` must be a Python float > 0 (e.g. 2.0), got "
                             f"{beta!r}.")
        if threshold is not None and (not isinstance(threshold, float)
                                      or not 0.0 < threshold <= 1.0):
            raise ValueError(f"{cls}: `threshold` must be None or a Python float in (0, 1] "
                             f"(e.g. 0.5), got {threshold!r}.")
        super().__init__(name=name, dtype=dtype)
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.axis = None if average == "micro" else 0
        self._built = False

    def build_from_shapes(self, y_true_shape, y_pred_shape):
        """Creates the state for `num_classes = y_pred_shape[-1]`: on the
        first update, or earlier when `compile` sees the output's shape (so
        a compiled step finds the variables made)."""
        if self._built:
            return
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2:
            raise ValueError(
                f"{type(self).__name__} expects y_true and y_pred of shape (batch, classes); "
                f"got y_true {tuple(y_true_shape)} and y_pred {tuple(y_pred_shape)}. "
                "One-hot encode class indices (loopax.utils.to_categorical).")
        shape = () if self.average == "micro" else (int(y_pred_shape[-1]),)
        for key in ("true_positives", "false_positives", "false_negatives",
                    "intermediate_weights"):
            setattr(self, key, self.add_variable(shape, "zeros", name=key))
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds one batch's counts.

        Args:
            y_true: labels of shape (batch, classes), 0/1 or in between.
            y_pred: scores of shape (batch, classes).
            sample_weight: optional weights of shape (batch,).
        """
        y_true, y_pred = as_array(y_true, self.dtype), as_array(y_pred, self.dtype)
        if not self._built:
            self.build_from_shapes(y_true.shape, y_pred.shape)
        if self.threshold is None:
            top = jnp.max(y_pred, axis=-1, keepdims=True)
            y_pred = ((y_pred >= top) & (jnp.abs(y_pred) > 1e-9)).astype(self.dtype)
            threshold = 0.5
        else:
            threshold = self.threshold
        counts = metrics_utils.batch_confusion_counts(
            y_true, y_pred, (threshold,), dtype=self.dtype, sample_weight=sample_weight,
            multi_label=True, soft_labels=True)
        # Counts at the one threshold, per class; "micro" sums the classes.
        counts = {key: value[0] if self.axis is not None else jnp.sum(value[0])
                  for key, value in counts.items()}
        self.true_positives.assign_add(counts["true_positives"])
        self.false_positives.assign_add(counts["false_positives"])
        self.false_negatives.assign_add(counts["false_negatives"])
        self.intermediate_weights.assign_add(counts["true_positives"]
                                             + counts["false_negatives"])

    def result(self):
        if not self._built:
            return jnp.zeros((), self.dtype)
        tp = self.true_positives.value
        precision = tp / (tp + self.false_positives.value + EPSILON)
        recall = tp / (tp + self.false_negatives.value + EPSILON)
        beta2 = self.beta ** 2
        score = precision * recall / (beta2 * precision + recall + EPSILON) * (1 + beta2)
        if self.average == "weighted":
            support = self.intermediate_weights.value
            return jnp.sum(score * support / (jnp.sum(support) + EPSILON))
        if self.average is not None:
            return jnp.mean(score)
        return score

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


@export("loopax.metrics.F1Score")
class F1Score(FBetaScore):
    """The F1 score, 2 * P * R / (P + R): `FBetaScore` with beta = 1.

    Args:
        average: None, "micro", "macro" or "weighted" (see `FBetaScore`).
        threshold: a float in (0, 1], or None for each row's maximum.
        name: the metric's name. dtype: its state's and result's dtype.

    Returns:
        `result()`: shape (classes,) with `average=None`, else a scalar.

    Raises:
        ValueError: as `FBetaScore`.
    """

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name,
                         dtype=dtype)

    def get_config(self):
        config = super().get_config()
        del config["beta"]
        return config
