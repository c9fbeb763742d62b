"""Metrics from confusion-matrix counts at thresholds: TruePositives and
friends, Precision, Recall and AUC (Keras semantics: positive means
`y_pred > threshold`, labels are positive when non-zero)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export
from loopax.src.losses.loss import EPSILON
from loopax.src.metrics import metrics_utils
from loopax.src.metrics.metric import Metric, as_array
from loopax.src.metrics.reduction_metrics import divide_no_nan


class _ConfusionMatrixConditionCount(Metric):
    """The weighted count of one confusion-matrix cell at each threshold."""

    _key = None

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = metrics_utils.parse_init_thresholds(thresholds)
        self._evenly = metrics_utils.is_evenly_distributed_thresholds(self.thresholds)
        self.accumulator = self.add_variable((len(self.thresholds),), "zeros", name="accumulator")

    def update_state(self, y_true, y_pred, sample_weight=None):
        metrics_utils.update_confusion_matrix_variables(
            {self._key: self.accumulator}, y_true, y_pred, self.thresholds,
            thresholds_distributed_evenly=self._evenly, sample_weight=sample_weight)

    def result(self):
        value = self.accumulator.value
        return value[0] if len(self.thresholds) == 1 else value

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


@export("loopax.metrics.TruePositives")
class TruePositives(_ConfusionMatrixConditionCount):
    """Weighted count of positive labels predicted positive (y_pred > threshold).

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar (or one
    value per threshold).

    Args:
        thresholds: A float or a list of floats in [0, 1]; predictions above a
            threshold count as positive (default 0.5). With a list, `result()` has
            one count per threshold.
        name: The metric's name (default: "true_positives", numbered if taken).
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    _key = "true_positives"


@export("loopax.metrics.FalsePositives")
class FalsePositives(_ConfusionMatrixConditionCount):
    """Weighted count of negative labels predicted positive.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar (or one
    value per threshold).

    Args:
        thresholds: A float or a list of floats in [0, 1]; predictions above a
            threshold count as positive (default 0.5). With a list, `result()` has
            one count per threshold.
        name: The metric's name (default: "false_positives", numbered if taken).
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    _key = "false_positives"


@export("loopax.metrics.TrueNegatives")
class TrueNegatives(_ConfusionMatrixConditionCount):
    """Weighted count of negative labels predicted negative.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar (or one
    value per threshold).

    Args:
        thresholds: A float or a list of floats in [0, 1]; predictions above a
            threshold count as positive (default 0.5). With a list, `result()` has
            one count per threshold.
        name: The metric's name (default: "true_negatives", numbered if taken).
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    _key = "true_negatives"


@export("loopax.metrics.FalseNegatives")
class FalseNegatives(_ConfusionMatrixConditionCount):
    """Weighted count of positive labels predicted negative.

    `update_state(y_true, y_pred, sample_weight=None)`; `result()` is a scalar (or one
    value per threshold).

    Args:
        thresholds: A float or a list of floats in [0, 1]; predictions above a
            threshold count as positive (default 0.5). With a list, `result()` has
            one count per threshold.
        name: The metric's name (default: "false_negatives", numbered if taken).
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    _key = "false_negatives"


class _PrecisionRecall(Metric):
    _direction = "up"
    _keys = ()

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        default = 0.5 if top_k is None else metrics_utils.NEG_INF
        self.thresholds = metrics_utils.parse_init_thresholds(thresholds, default)
        self._evenly = metrics_utils.is_evenly_distributed_thresholds(self.thresholds)
        n = len(self.thresholds)
        self.true_positives = self.add_variable((n,), "zeros", name="true_positives")
        other = self._keys[1]
        setattr(self, other, self.add_variable((n,), "zeros", name=other))

    def update_state(self, y_true, y_pred, sample_weight=None):
        metrics_utils.update_confusion_matrix_variables(
            {key: getattr(self, key) for key in self._keys}, y_true, y_pred, self.thresholds,
            thresholds_distributed_evenly=self._evenly, top_k=self.top_k,
            class_id=self.class_id, sample_weight=sample_weight)

    def result(self):
        tp = self.true_positives.value
        value = divide_no_nan(tp, tp + getattr(self, self._keys[1]).value)
        return value[0] if len(self.thresholds) == 1 else value

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds,
                "top_k": self.top_k, "class_id": self.class_id}


@export("loopax.metrics.Precision")
class Precision(_PrecisionRecall):
    """tp / (tp + fp) at each threshold (default 0.5).

    `top_k` counts only each row's k highest predictions as candidates;
    `class_id` restricts to one class of a (batch, classes) output.

    Args:
        thresholds: A float or a list of floats in [0, 1]; predictions above a
            threshold count as positive (default 0.5; no threshold with `top_k`). With
            a list, `result()` has one count per threshold.
        top_k: Count only each row's k highest predictions as candidates, or None.
        class_id: Restrict to this class of a `(batch, classes)` output, or None.
        name: The metric's name (default "precision").
        dtype: The dtype of its state and result; None is `floatx()`.
    """
    _keys = ("true_positives", "false_positives")


@export("loopax.metrics.Recall")
class Recall(_PrecisionRecall):
    """tp / (tp + fn) at each threshold (default 0.5); `top_k`, `class_id` as Precision.

    Args:
        thresholds: A float or a list of floats in [0, 1]; predictions above a
            threshold count as positive (default 0.5; no threshold with `top_k`). With
            a list, `result()` has one count per threshold.
        top_k: Count only each row's k highest predictions as candidates, or None.
        class_id: Restrict to this class of a `(batch, classes)` output, or None.
        name: The metric's name (default "recall").
        dtype: The dtype of its state and result; None is `floatx()`.
    """

    _keys = ("true_positives", "false_negatives")


@export("loopax.metrics.AUC")
class AUC(Metric):
    """Area under the ROC or precision-recall curve, from counts at thresholds.

    Args:
        num_thresholds: how many thresholds (evenly spaced in [0, 1], the ends
            nudged by eps) approximate the curve; default 200.
        curve: "ROC" or "PR".
        summation_method: "interpolation" (trapezoids for ROC; for PR the
            interpolation of Davis & Goadrich, as Keras), "minoring" or
            "majoring" (left or right Riemann sums).
        thresholds: explicit thresholds in [0, 1] instead of `num_thresholds`.
        multi_label: keep one curve per label (y of shape (batch, labels))
            and average their areas (weighted by `label_weights`).
        num_labels: number of labels, when `multi_label`; otherwise found on
            the first update.
        label_weights: per-label weights for the counts (or the average).
        from_logits: apply a sigmoid to `y_pred` first.
    """

    _direction = "up"

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        super().__init__(name=name, dtype=dtype)
        curve = str(curve).upper()
        if curve not in ("ROC", "PR"):
            raise ValueError(f'AUC: `curve` must be "ROC" or "PR", got {curve!r}.')
        summation_method = str(summation_method).lower()
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError('AUC: `summation_method` must be "interpolation", "minoring" '
                             f'or "majoring", got {summation_method!r}.')
        if thresholds is not None:
            thresholds = sorted(metrics_utils.parse_init_thresholds(thresholds))
            self._explicit_thresholds = thresholds
            self.num_thresholds = len(thresholds) + 2
            self._evenly = metrics_utils.is_evenly_distributed_thresholds(
                np.array([0.0] + thresholds + [1.0]))
        else:
            if int(num_thresholds) <= 1:
                raise ValueError("AUC: `num_thresholds` must be an integer > 1, got "
                                 f"{num_thresholds}.")
            self._explicit_thresholds = None
            self.num_thresholds = n = int(num_thresholds)
            thresholds = [(i + 1) / (n - 1) for i in range(n - 2)]
            self._evenly = True
        self._thresholds = np.array([0.0 - EPSILON] + thresholds + [1.0 + EPSILON])
        self.curve = curve
        self.summation_method = summation_method
        self.multi_label = bool(multi_label)
        self.num_labels = num_labels
        self.label_weights = (
            None if label_weights is None else jnp.asarray(label_weights, self.dtype)
        )
        self._from_logits = from_logits
        if self.multi_label:
            if num_labels:
                self._build(num_labels)
        else:
            if num_labels:
                raise ValueError("AUC: `num_labels` is only needed with multi_label=True.")
            self._build(None)

    @property
    def thresholds(self):
        """The thresholds, the -eps and 1 + eps ends included."""
        return list(self._thresholds)

    def _build(self, num_labels):
        shape = (self.num_thresholds,) if num_labels is None else (self.num_thresholds, num_labels)
        self.num_labels = num_labels
        for key in metrics_utils.CONFUSION_KEYS:
            setattr(self, key, self.add_variable(shape, "zeros", name=key))
        self._built = True

    def build_from_shapes(self, y_true_shape, y_pred_shape):
        """With `multi_label` and no `num_labels`: creates the state for
        `y_pred_shape[-1]` labels (on the first update, or earlier when
        `compile` sees the output's shape)."""
        if getattr(self, "_built", False):
            return
        if len(y_pred_shape) != 2:
            raise ValueError("AUC(multi_label=True) expects y_pred of shape (batch, "
                             f"num_labels); got {tuple(y_pred_shape)}.")
        self._build(int(y_pred_shape[1]))

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = as_array(y_pred, self.dtype)
        self.build_from_shapes(None, y_pred.shape)
        if self._from_logits:
            y_pred = jax.nn.sigmoid(y_pred)
        metrics_utils.update_confusion_matrix_variables(
            {key: getattr(self, key) for key in metrics_utils.CONFUSION_KEYS},
            y_true, y_pred, self._thresholds,
            thresholds_distributed_evenly=self._evenly, sample_weight=sample_weight,
            multi_label=self.multi_label,
            label_weights=None if self.multi_label else self.label_weights)

    def result(self):
        if not getattr(self, "_built", False):
            return jnp.zeros((), self.dtype)
        counts = [getattr(self, key).value for key in metrics_utils.CONFUSION_KEYS]
        return _auc(*counts, self.label_weights if self.multi_label else None,
                    curve=self.curve, summation_method=self.summation_method,
                    multi_label=self.multi_label)

    def get_config(self):
        label_weights = (
            None if self.label_weights is None else np.asarray(self.label_weights).tolist()
        )
        config = {**super().get_config(), "num_thresholds": self.num_thresholds,
                  "curve": self.curve, "summation_method": self.summation_method,
                  "multi_label": self.multi_label, "num_labels": self.num_labels,
                  "label_weights": label_weights, "from_logits": self._from_logits}
        if self._explicit_thresholds is not None:
            config["thresholds"] = list(self._explicit_thresholds)
        return config


@functools.partial(jax.jit, static_argnames=("curve", "summation_method", "multi_label"))
def _auc(tp, fp, tn, fn, label_weights, curve, summation_method, multi_label):
    """The area from counts of shape (thresholds,) or (thresholds, labels)."""
    if curve == "PR" and summation_method == "interpolation":
        terms = _interpolated_pr_terms(tp, fp, fn)
    else:
        recall = divide_no_nan(tp, tp + fn)
        if curve == "ROC":
            x, y = divide_no_nan(fp, fp + tn), recall
        else:
            x, y = recall, divide_no_nan(tp, tp + fp)
        if summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif summation_method == "minoring":
            heights = jnp.minimum(y[:-1], y[1:])
        else:
            heights = jnp.maximum(y[:-1], y[1:])
        terms = (x[:-1] - x[1:]) * heights
    if not multi_label:
        return jnp.sum(terms)
    by_label = jnp.sum(terms, axis=0)
    if label_weights is None:
        return jnp.mean(by_label)
    return divide_no_nan(jnp.sum(by_label * label_weights), jnp.sum(label_weights))


def _interpolated_pr_terms(tp, fp, fn):
    """Per-interval areas under the PR curve, precision interpolated between
    thresholds as Davis & Goadrich (2006): within an interval tp and the
    number of predicted positives p change linearly together."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    slope = divide_no_nan(dtp, jnp.maximum(dp, 0))
    intercept = tp[1:] - slope * p[1:]
    both_positive = (p[:-1] > 0) & (p[1:] > 0)
    p_ratio = jnp.where(both_positive, divide_no_nan(p[:-1], jnp.maximum(p[1:], 0)),
                        jnp.ones_like(p[1:]))
    return divide_no_nan(slope * (dtp + intercept * jnp.log(p_ratio)),
                         jnp.maximum(tp[1:] + fn[1:], 0))


class _RateAtRate(Metric):
    """The best value of one rate over thresholds where another rate reaches
    `value`: counts tp, fp, tn, fn at `num_thresholds` thresholds evenly
    spaced in [0, 1] (just 0.5 when `num_thresholds` is 1), then
    `result() = max(dependent[t] where constrained[t] >= value)`, 0 when no
    threshold qualifies. Subclasses name the two rates and the constructor
    argument holding `value`."""

    _direction = "up"
    _value_arg = None

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        cls = type(self).__name__
        if not isinstance(value, (int, float, np.number)) or not 0 <= value <= 1:
            raise ValueError(f"{cls}: `{self._value_arg}` must be a number in [0, 1], got "
                             f"{value!r}.")
        if not isinstance(num_thresholds, (int, np.integer)) or num_thresholds <= 0:
            raise ValueError(f"{cls}: `num_thresholds` must be an integer > 0, got "
                             f"{num_thresholds!r}.")
        super().__init__(name=name, dtype=dtype)
        self.value = value
        setattr(self, self._value_arg, value)
        self.num_thresholds = int(num_thresholds)
        self.class_id = class_id
        if num_thresholds == 1:
            self.thresholds, self._evenly = [0.5], False
        else:
            n = num_thresholds
            self.thresholds = [0.0] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1.0]
            self._evenly = True
        for key in ("true_positives", "false_positives", "true_negatives", "false_negatives"):
            setattr(self, key, self.add_variable((len(self.thresholds),), "zeros", name=key))

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds one batch's counts; labels are positive when non-zero.

        Args:
            y_true: labels, any shape matching `y_pred` ((batch, classes) with `class_id`).
            y_pred: scores in [0, 1], positive at threshold t when `> t`.
            sample_weight: optional weights broadcastable to `y_pred`
                (e.g. one per sample, shape (batch,)).
        """
        metrics_utils.update_confusion_matrix_variables(
            {key: getattr(self, key) for key in metrics_utils.CONFUSION_KEYS},
            y_true, y_pred, self.thresholds, thresholds_distributed_evenly=self._evenly,
            class_id=self.class_id, sample_weight=sample_weight)

    def _rates(self):
        """(constrained, dependent) rates over thresholds."""
        raise NotImplementedError

    def result(self):
        constrained, dependent = self._rates()
        return jnp.max(jnp.where(constrained >= self.value, dependent, 0.0), initial=0.0)

    def get_config(self):
        return {**super().get_config(), "class_id": self.class_id,
                "num_thresholds": self.num_thresholds, self._value_arg: self.value}

    # The four rates, from the counts.
    def _sensitivity(self):
        tp = self.true_positives.value
        return divide_no_nan(tp, tp + self.false_negatives.value)

    def _specificity(self):
        tn = self.true_negatives.value
        return divide_no_nan(tn, tn + self.false_positives.value)

    def _precision(self):
        tp = self.true_positives.value
        return divide_no_nan(tp, tp + self.false_positives.value)


@export("loopax.metrics.SensitivityAtSpecificity")
class SensitivityAtSpecificity(_RateAtRate):
    """The best sensitivity (tp / (tp + fn)) over thresholds whose specificity
    (tn / (tn + fp)) is at least `specificity`; 0 when none is.

    Args:
        specificity: the required specificity, in [0, 1].
        num_thresholds: thresholds evenly spaced in [0, 1] to search (default
            200; 1 means the single threshold 0.5).
        class_id: score only this class of a (batch, classes) output.
        name: the metric's name. dtype: its state's and result's dtype.

    Returns:
        `result()`: a scalar of `dtype`.

    Raises:
        ValueError: `specificity` outside [0, 1] or `num_thresholds` < 1.
    """

    _value_arg = "specificity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)

    def _rates(self):
        return self._specificity(), self._sensitivity()


@export("loopax.metrics.SpecificityAtSensitivity")
class SpecificityAtSensitivity(_RateAtRate):
    """The best specificity (tn / (tn + fp)) over thresholds whose sensitivity
    (tp / (tp + fn)) is at least `sensitivity`; 0 when none is.

    Args:
        sensitivity: the required sensitivity, in [0, 1].
        num_thresholds: thresholds evenly spaced in [0, 1] to search (default
            200; 1 means the single threshold 0.5).
        class_id: score only this class of a (batch, classes) output.
        name: the metric's name. dtype: its state's and result's dtype.

    Returns:
        `result()`: a scalar of `dtype`.

    Raises:
        ValueError: `sensitivity` outside [0, 1] or `num_thresholds` < 1.
    """

    _value_arg = "sensitivity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)

    def _rates(self):
        return self._sensitivity(), self._specificity()


@export("loopax.metrics.PrecisionAtRecall")
class PrecisionAtRecall(_RateAtRate):
    """The best precision (tp / (tp + fp)) over thresholds whose recall
    (tp / (tp + fn)) is at least `recall`; 0 when none is.

    Args:
        recall: the required recall, in [0, 1].
        num_thresholds: thresholds evenly spaced in [0, 1] to search (default
            200; 1 means the single threshold 0.5).
        class_id: score only this class of a (batch, classes) output.
        name: the metric's name. dtype: its state's and result's dtype.

    Returns:
        `result()`: a scalar of `dtype`.

    Raises:
        ValueError: `recall` outside [0, 1] or `num_thresholds` < 1.
    """

    _value_arg = "recall"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(recall, num_thresholds, class_id, name, dtype)

    def _rates(self):
        return self._sensitivity(), self._precision()


@export("loopax.metrics.RecallAtPrecision")
class RecallAtPrecision(_RateAtRate):
    """The best recall (tp / (tp + fn)) over thresholds whose precision
    (tp / (tp + fp)) is at least `precision`; 0 when none is (the precision
    may be out of reach).

    Args:
        precision: the required precision, in [0, 1].
        num_thresholds: thresholds evenly spaced in [0, 1] to search (default
            200; 1 means the single threshold 0.5).
        class_id: score only this class of a (batch, classes) output.
        name: the metric's name. dtype: its state's and result's dtype.

    Returns:
        `result()`: a scalar of `dtype`.

    Raises:
        ValueError: `precision` outside [0, 1] or `num_thresholds` < 1.
    """

    _value_arg = "precision"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(precision, num_thresholds, class_id, name, dtype)

    def _rates(self):
        return self._precision(), self._sensitivity()
