"""Confusion-matrix counting at thresholds, shared by Precision, Recall, AUC
and the TruePositives-style metrics.

A prediction is positive at threshold t when `y_pred > t`; a label is
positive when it is non-zero. Counts are weighted by `sample_weight` (and
`label_weights`). Evenly spaced thresholds in [0, 1] (AUC's default) are
counted by bucketing each prediction once, O(n + thresholds), instead of
comparing it with every threshold; both give the same counts.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.losses.loss import EPSILON, squeeze_or_expand_to_same_rank
from loopax.src.metrics.metric import as_array

NEG_INF = -1e10
CONFUSION_KEYS = ("true_positives", "false_positives", "true_negatives", "false_negatives")


def parse_init_thresholds(thresholds, default_threshold=0.5):
    """A list of thresholds, each checked to lie in [0, 1]."""
    if thresholds is None:
        return [default_threshold]
    thresholds = list(np.ravel(thresholds).tolist()) if not isinstance(thresholds, (int, float)) \
        else [thresholds]
    bad = [t for t in thresholds if t is None or not 0 <= t <= 1]
    if bad:
        raise ValueError(f"Threshold values must be in [0, 1]. Received: {bad}")
    return thresholds


def is_evenly_distributed_thresholds(thresholds):
    """Whether `thresholds` are i / (n - 1) for i = 0..n-1 (within eps), n >= 3."""
    n = len(thresholds)
    if n < 3:
        return False
    even = np.arange(n, dtype=np.float32) / (n - 1)
    return bool(np.allclose(thresholds, even, atol=EPSILON))


def _filter_top_k(y_pred, k):
    """y_pred with everything but the k largest entries of each row set to NEG_INF."""
    _, idx = jax.lax.top_k(y_pred, k)
    keep = jnp.sum(jax.nn.one_hot(idx, y_pred.shape[-1], dtype=y_pred.dtype), axis=-2)
    return y_pred * keep + NEG_INF * (1.0 - keep)


def _per_sample_weight(sample_weight, shape, dtype):
    """`sample_weight` broadcast to `shape`, a (batch,) weight applying per sample."""
    w = as_array(sample_weight, dtype)
    while w.ndim > len(shape) and w.shape[-1] == 1:
        w = jnp.squeeze(w, -1)
    if w.ndim < len(shape):
        w = jnp.reshape(w, w.shape + (1,) * (len(shape) - w.ndim))
    try:
        return jnp.broadcast_to(w, shape)
    except ValueError:
        raise ValueError(f"sample_weight of shape {tuple(jnp.shape(sample_weight))} does "
                         f"not fit predictions of shape {tuple(shape)}.") from None


def confusion_counts(y_true, y_pred, thresholds, top_k=None, class_id=None,
                     sample_weight=None, multi_label=False, label_weights=None,
                     thresholds_distributed_evenly=False, soft_labels=False, dtype="float32"):
    """Weighted {tp, fp, tn, fn} counts at each threshold.

    Shapes: (num_thresholds,), or (num_thresholds, num_labels) with
    `multi_label` (y_pred of shape (batch, num_labels)). With `soft_labels`
    a label y counts as y positive and 1 - y negative (the F-scores' rule)
    instead of positive when non-zero.
    """
    y_true = as_array(y_true, dtype)
    y_pred = as_array(y_pred, dtype)
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true of shape {tuple(y_true.shape)} does not match y_pred of "
                         f"shape {tuple(y_pred.shape)}.")
    weights = None
    if sample_weight is not None:
        weights = _per_sample_weight(sample_weight, y_pred.shape, dtype)
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        if y_pred.ndim < 2:
            raise ValueError("`class_id` needs predictions with a class axis, got shape "
                             f"{tuple(y_pred.shape)}.")
        y_true, y_pred = y_true[..., class_id, None], y_pred[..., class_id, None]
        if weights is not None:
            weights = weights[..., class_id, None]
    if multi_label and y_pred.ndim != 2:
        raise ValueError("With multi_label=True, y_pred must have shape (batch, num_labels); "
                         f"got {tuple(y_pred.shape)}.")
    if label_weights is not None and not multi_label:
        lw = jnp.broadcast_to(as_array(label_weights, dtype), y_pred.shape)
        weights = lw if weights is None else weights * lw

    is_pos = y_true if soft_labels else (y_true != 0).astype(dtype)
    weights = jnp.ones_like(y_pred) if weights is None else weights
    if not multi_label:
        y_pred, is_pos, weights = (
            y_pred.reshape(-1, 1),
            is_pos.reshape(-1, 1),
            weights.reshape(-1, 1),
        )
    pos_w = is_pos * weights            # (n, labels)
    neg_w = (1.0 - is_pos) * weights
    thresholds = np.asarray(thresholds, dtype=np.float64)
    if thresholds_distributed_evenly:
        tp, fp = _counts_by_bucket(y_pred, pos_w, neg_w, thresholds)
    else:
        above = (y_pred[None] > jnp.asarray(thresholds, dtype)[:, None, None]).astype(dtype)
        tp = jnp.sum(above * pos_w[None], axis=1)
        fp = jnp.sum(above * neg_w[None], axis=1)
    fn = jnp.sum(pos_w, axis=0) - tp
    tn = jnp.sum(neg_w, axis=0) - fp
    counts = {"true_positives": tp, "false_positives": fp,
              "true_negatives": tn, "false_negatives": fn}
    if not multi_label:
        counts = {k: v[:, 0] for k, v in counts.items()}
    return counts


def _counts_by_bucket(y_pred, pos_w, neg_w, thresholds):
    """(tp, fp) of shape (T, labels) for thresholds i / (T - 1) (the ends may
    be nudged by eps): each prediction adds its weight to the bucket of the
    highest threshold it exceeds, then a reverse cumulative sum counts, for
    each threshold, the weight of predictions above it."""
    num_thresholds = len(thresholds)
    num_labels = y_pred.shape[1]
    y_pred = jnp.clip(y_pred, 0.0, 1.0)
    bucket = jnp.ceil(y_pred * (num_thresholds - 1)) - 1
    if thresholds[0] < 0.0 or thresholds[-1] > 1.0:
        bucket = jnp.maximum(bucket, 0)   # every prediction exceeds the -eps threshold
    bucket = bucket.astype(jnp.int32)
    # One segment per (label, bucket), and a last one collecting bucket -1 (a
    # prediction of 0 against a threshold of exactly 0), which counts nowhere.
    num_segments = num_thresholds * num_labels
    segment = jnp.where(bucket >= 0, bucket + num_thresholds * jnp.arange(num_labels),
                        num_segments)

    def cumulative(weights):
        per_bucket = jax.ops.segment_sum(weights.reshape(-1), segment.reshape(-1),
                                         num_segments=num_segments + 1)[:num_segments]
        per_bucket = per_bucket.reshape(num_labels, num_thresholds).T
        return jnp.flip(jnp.cumsum(jnp.flip(per_bucket, 0), axis=0), 0)

    return cumulative(pos_w), cumulative(neg_w)


# One compiled computation per configuration and shape: eager updates then
# cost one dispatch, not one per operation (inside jax.jit it is inlined).
_compiled_counts = jax.jit(confusion_counts, static_argnames=(
    "thresholds", "top_k", "class_id", "multi_label", "thresholds_distributed_evenly",
    "soft_labels", "dtype"))


def batch_confusion_counts(y_true, y_pred, thresholds, dtype="float32", **kwargs):
    """`confusion_counts` of one batch, compiled once per configuration and
    shape; takes arrays, Variables, Tensors or lists."""
    arrays = {}
    for key in ("sample_weight", "label_weights"):
        value = kwargs.pop(key, None)
        arrays[key] = None if value is None else as_array(value)
    return _compiled_counts(as_array(y_true), as_array(y_pred),
                            tuple(float(t) for t in np.ravel(thresholds)),
                            dtype=str(dtype), **arrays, **kwargs)


def update_confusion_matrix_variables(variables_to_update, y_true, y_pred, thresholds, **kwargs):
    """Adds the confusion counts to the Variables in `variables_to_update`
    (a dict keyed by "true_positives", "false_positives", ...)."""
    unknown = set(variables_to_update) - set(CONFUSION_KEYS)
    if unknown:
        raise ValueError(f"Unknown confusion-matrix keys {sorted(unknown)}; valid: "
                         f"{list(CONFUSION_KEYS)}.")
    some = next(iter(variables_to_update.values()))
    counts = batch_confusion_counts(y_true, y_pred, thresholds, dtype=some.dtype, **kwargs)
    for key, variable in variables_to_update.items():
        variable.assign_add(counts[key])


def confusion_matrix(labels, predictions, num_classes, weights=None, dtype="int32"):
    """The (num_classes, num_classes) matrix whose entry [i, j] sums the
    weights of the entries labelled i and predicted j.

    Args:
        labels, predictions: integer class ids of the same shape, each in
            [0, num_classes).
        num_classes: the matrix's size.
        weights: optional weights of the same shape (default 1 each).
        dtype: the matrix's dtype.
    """
    labels = jnp.ravel(labels).astype(jnp.int32)
    predictions = jnp.ravel(predictions).astype(jnp.int32)
    weights = jnp.ones(labels.shape, dtype) if weights is None \
        else jnp.ravel(weights).astype(dtype)
    cells = jax.ops.segment_sum(weights, labels * num_classes + predictions,
                                num_segments=num_classes * num_classes)
    return cells.reshape(num_classes, num_classes)
