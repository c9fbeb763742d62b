"""Intersection-over-union metrics for classification and segmentation:
a running class confusion matrix, and IoU = tp / (tp + fp + fn) per class,
averaged over the target classes."""

from __future__ import annotations

import warnings

import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.losses.loss import EPSILON
from loopax.src.metrics import metrics_utils
from loopax.src.metrics.metric import Metric, as_array


@export("loopax.metrics.IoU")
class IoU(Metric):
    """The mean intersection-over-union of the classes `target_class_ids`.

    Each update adds the labels' and predictions' class ids to a running
    (num_classes, num_classes) confusion matrix, rows labels and columns
    predictions, weighted by `sample_weight`; entries whose label or
    prediction lies outside [0, num_classes), or whose label is
    `ignore_class`, do not count. A class's IoU is tp / (row + column - tp);
    classes never seen (an empty row and column) are left out of the mean.

    The state's dtype is `dtype` (default "int32", as Keras): with an
    integer dtype, class ids given as floats and float sample weights are
    truncated to integers; pass `dtype="float32"` for fractional weights.

    Args:
        num_classes: the number of classes (the matrix's size).
        target_class_ids: the classes whose IoUs are averaged.
        name: the metric's name. dtype: the confusion matrix's dtype.
        ignore_class: a label id not to count (e.g. a "void" class), or None.
        sparse_y_true: labels are class ids; False: one score per class along
            `axis`, reduced by argmax.
        sparse_y_pred: predictions are class ids; False: argmax along `axis`.
        axis: the class axis of dense labels or predictions.

    Returns:
        `result()`: a float32 scalar.

    Raises:
        ValueError: a target class id outside [0, num_classes).
    """

    _direction = "up"

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        target_class_ids = list(target_class_ids)
        if not target_class_ids or not all(0 <= int(c) < num_classes for c in target_class_ids):
            raise ValueError(f"{type(self).__name__}: `target_class_ids` must be class ids in "
                             f"[0, {num_classes}) (num_classes={num_classes}), got "
                             f"{target_class_ids}.")
        super().__init__(name=name, dtype=dtype or "int32")
        self.num_classes = num_classes
        self.target_class_ids = target_class_ids
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_variable((num_classes, num_classes), "zeros",
                                          name="total_confusion_matrix")

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds one batch to the confusion matrix.

        Args:
            y_true: class ids (any shape), or scores along `axis` when not
                `sparse_y_true`.
            y_pred: class ids, or scores along `axis` when not `sparse_y_pred`.
            sample_weight: optional weights of the (reduced) labels' shape,
                or one per sample (shape (batch,)).
        """
        y_true, y_pred = as_array(y_true), as_array(y_pred)
        if not self.sparse_y_true:
            y_true = jnp.argmax(y_true, axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = jnp.argmax(y_pred, axis=self.axis)
        y_true, y_pred = y_true.astype(self.dtype), y_pred.astype(self.dtype)
        if sample_weight is None:
            weights = jnp.ones(y_true.shape, self.dtype)
        else:
            sample_weight = as_array(sample_weight)
            if jnp.issubdtype(sample_weight.dtype, jnp.floating) and \
                    jnp.issubdtype(self.dtype, jnp.integer):
                warnings.warn(f"{type(self).__name__}: float sample weights are truncated to "
                              f"the metric's integer dtype {self.dtype}; pass integer "
                              "weights or dtype='float32'.", stacklevel=2)
            weights = metrics_utils._per_sample_weight(
                sample_weight.astype(self.dtype), y_true.shape, self.dtype)
        y_true, y_pred, weights = jnp.ravel(y_true), jnp.ravel(y_pred), jnp.ravel(weights)
        counted = (y_true >= 0) & (y_true < self.num_classes) & \
                  (y_pred >= 0) & (y_pred < self.num_classes)
        if self.ignore_class is not None:
            counted = counted & (y_true != self.ignore_class)
        self.total_cm.assign_add(metrics_utils.confusion_matrix(
            jnp.where(counted, y_true, 0), jnp.where(counted, y_pred, 0), self.num_classes,
            weights=jnp.where(counted, weights, 0), dtype=self.dtype))

    def result(self):
        cm = self.total_cm.value.astype("float32")
        tp = jnp.diagonal(cm)
        union = jnp.sum(cm, axis=0) + jnp.sum(cm, axis=1) - tp
        ids = jnp.asarray(self.target_class_ids, jnp.int32)
        tp, union = tp[ids], union[ids]
        seen = union > 1e-9
        iou = jnp.where(seen, tp / (union + EPSILON), 0.0)
        return jnp.sum(iou) / (jnp.sum(seen.astype("float32")) + EPSILON)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes,
                "target_class_ids": self.target_class_ids, "ignore_class": self.ignore_class,
                "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


@export("loopax.metrics.BinaryIoU")
class BinaryIoU(IoU):
    """IoU of binary labels and scores: a score >= `threshold` predicts
    class 1, below it class 0; the IoUs of `target_class_ids` ((0, 1): both
    classes; [0] or [1]: one) are averaged.

    Args:
        target_class_ids: which of the classes 0 and 1 to average.
        threshold: the score from which class 1 is predicted.
        name: the metric's name. dtype: the confusion matrix's dtype
            (default "int32": float sample weights are truncated).

    Returns:
        `result()`: a float32 scalar.

    Raises:
        ValueError: a target class id other than 0 or 1.
    """

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(num_classes=2, target_class_ids=target_class_ids, name=name,
                         dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds one batch: labels 0/1, scores of the same shape.

        Args:
            y_true: 0/1 labels.
            y_pred: scores, class 1 where `>= threshold`.
            sample_weight: optional weights, per entry or per sample.
        """
        y_pred = (as_array(y_pred, "float32") >= self.threshold).astype(self.dtype)
        super().update_state(as_array(y_true, self.dtype), y_pred, sample_weight)

    def get_config(self):
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold,
                "name": self.name, "dtype": self.dtype}


@export("loopax.metrics.MeanIoU")
class MeanIoU(IoU):
    """The mean IoU over all `num_classes` classes seen (IoU with
    `target_class_ids = range(num_classes)`).

    Args:
        num_classes: the number of classes.
        name: the metric's name. dtype: the confusion matrix's dtype
            (default "int32": float sample weights are truncated).
        ignore_class, sparse_y_true, sparse_y_pred, axis: as `IoU`.

    Returns:
        `result()`: a float32 scalar.
    """

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, list(range(num_classes)), name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super().get_config()
        del config["target_class_ids"]
        return config


@export("loopax.metrics.OneHotIoU")
class OneHotIoU(IoU):
    """IoU of one-hot labels (argmax along `axis`) against scores (argmax
    too, unless `sparse_y_pred`), averaged over `target_class_ids`.

    Args:
        num_classes: the number of classes (the labels' `axis` length).
        target_class_ids: the classes whose IoUs are averaged.
        name: the metric's name. dtype: the confusion matrix's dtype
            (default "int32": float sample weights are truncated).
        ignore_class: a class id not to count, or None.
        sparse_y_pred: predictions are class ids already.
        axis: the class axis.

    Returns:
        `result()`: a float32 scalar.

    Raises:
        ValueError: a target class id outside [0, num_classes).
    """

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super().get_config()
        del config["sparse_y_true"]
        return config


@export("loopax.metrics.OneHotMeanIoU")
class OneHotMeanIoU(MeanIoU):
    """The mean IoU over all classes of one-hot labels (argmax along `axis`)
    against scores (argmax too, unless `sparse_y_pred`).

    Args:
        num_classes: the number of classes (the labels' `axis` length).
        name: the metric's name. dtype: the confusion matrix's dtype
            (default "int32": float sample weights are truncated).
        ignore_class: a class id not to count, or None.
        sparse_y_pred: predictions are class ids already.
        axis: the class axis.

    Returns:
        `result()`: a float32 scalar.
    """

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super().get_config()
        del config["sparse_y_true"]
        return config
