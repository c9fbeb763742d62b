"""The built-in losses, as functions and as `Loss` classes (Keras 3 semantics).

Each function takes `(y_true, y_pred, **options)` and returns per-sample
losses, reducing the last axis: shape (batch,) for (batch, d) inputs. Each is a
loopax op, so it takes Variables and Tensors and a recording GradientTape sees
it. Each class wraps its function and adds `sample_weight` and `reduction`.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp

from loopax.src import dtypes
from loopax.src.api_export import export
from loopax.src.losses.loss import EPSILON, Loss, check_same_shape, squeeze_or_expand_to_same_rank
from loopax.src.ops.nn import ctc_loss
from loopax.src.tensor import op

__all__ = [
    "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error", "huber", "log_cosh", "cosine_similarity",
    "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
    "sparse_categorical_crossentropy", "kl_divergence", "poisson", "hinge",
    "squared_hinge", "categorical_hinge", "categorical_focal_crossentropy",
    "categorical_generalized_cross_entropy", "dice", "tversky", "circle", "ctc",
    "mse", "MSE", "mae", "MAE", "mape", "MAPE", "msle", "MSLE", "kld", "KLD",
    "kullback_leibler_divergence", "logcosh", "bce", "BCE",
    "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError",
    "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "Huber", "LogCosh",
    "CosineSimilarity", "BinaryCrossentropy", "BinaryFocalCrossentropy",
    "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "KLDivergence",
    "Poisson", "Hinge", "SquaredHinge", "CategoricalHinge", "CategoricalFocalCrossentropy",
    "CategoricalGeneralizedCrossEntropy", "Dice", "Tversky", "Circle", "CTC",
]


def elementwise(fn):
    """Marks a per-sample loss that works element by element and averages the
    last axis, so (batch,) inputs hold one value per sample (see
    `LossFunctionWrapper`)."""
    fn._elementwise = True
    return fn


def is_elementwise(fn):
    return getattr(fn, "_elementwise", False)


def _as_float(x, dtype=None):
    x = jnp.asarray(x)
    if dtype is not None:
        return x.astype(dtype)
    return x if dtypes.is_float(x.dtype) else x.astype(dtypes.floatx())


# Losses Keras 3 computes on targets and outputs broadcast against each other
# (the others require y_true to match y_pred, or to broadcast into it).
_MUTUALLY_BROADCASTING = {
    "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error", "huber", "log_cosh", "cosine_similarity",
    "kl_divergence", "poisson", "hinge", "squared_hinge", "categorical_hinge"}


def _prepare(y_true, y_pred, who):
    """y_pred as float, y_true in its dtype, ranks fixed, shapes checked."""
    y_pred = _as_float(y_pred)
    y_true = _as_float(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    check_same_shape(y_true, y_pred, who, mutual=who in _MUTUALLY_BROADCASTING)
    return y_true, y_pred


# --------------------------------------------------------------------------
# Regression
# --------------------------------------------------------------------------

@export(
    "loopax.losses.MSE",
    "loopax.losses.mean_squared_error",
    "loopax.losses.mse",
    "loopax.metrics.mean_squared_error",
)
@elementwise
@op
def mean_squared_error(y_true, y_pred):
    """mean((y_true - y_pred)**2, axis=-1).

    Args:
        y_true: Targets, `(batch, ..., d)` (`(batch,)` is taken as `(batch, 1)`).
        y_pred: Predictions of the same shape (y_true may broadcast to it).

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_error")
    return jnp.mean(jnp.square(y_true - y_pred), axis=-1)


@export(
    "loopax.losses.MAE",
    "loopax.losses.mae",
    "loopax.losses.mean_absolute_error",
    "loopax.metrics.mean_absolute_error",
)
@elementwise
@op
def mean_absolute_error(y_true, y_pred):
    """mean(|y_true - y_pred|, axis=-1).

    Args:
        y_true: Targets, `(batch, ..., d)` (`(batch,)` is taken as `(batch, 1)`).
        y_pred: Predictions of the same shape (y_true may broadcast to it).

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_error")
    return jnp.mean(jnp.abs(y_true - y_pred), axis=-1)


@export(
    "loopax.losses.MAPE",
    "loopax.losses.mape",
    "loopax.losses.mean_absolute_percentage_error",
    "loopax.metrics.mean_absolute_percentage_error",
)
@elementwise
@op
def mean_absolute_percentage_error(y_true, y_pred):
    """100 * mean(|(y_true - y_pred) / max(|y_true|, eps)|, axis=-1).

    Args:
        y_true: Targets, `(batch, ..., d)` (`(batch,)` is taken as `(batch, 1)`).
        y_pred: Predictions of the same shape (y_true may broadcast to it).

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_percentage_error")
    diff = jnp.abs((y_true - y_pred) / jnp.maximum(jnp.abs(y_true), EPSILON))
    return 100.0 * jnp.mean(diff, axis=-1)


@export(
    "loopax.losses.MSLE",
    "loopax.losses.mean_squared_logarithmic_error",
    "loopax.losses.msle",
    "loopax.metrics.mean_squared_logarithmic_error",
)
@elementwise
@op
def mean_squared_logarithmic_error(y_true, y_pred):
    """mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))**2, axis=-1).

    Args:
        y_true: Targets, `(batch, ..., d)` (`(batch,)` is taken as `(batch, 1)`).
        y_pred: Predictions of the same shape (y_true may broadcast to it).

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_logarithmic_error")
    first = jnp.log(jnp.maximum(y_pred, EPSILON) + 1.0)
    second = jnp.log(jnp.maximum(y_true, EPSILON) + 1.0)
    return jnp.mean(jnp.square(first - second), axis=-1)


@export("loopax.losses.huber", "loopax.metrics.huber")
@elementwise
@op
def huber(y_true, y_pred, delta=1.0):
    """mean(0.5 e**2 if |e| <= delta else delta (|e| - 0.5 delta), axis=-1), e = y_pred - y_true.

    Args:
        y_true: Targets, `(batch, ..., d)` (`(batch,)` is taken as `(batch, 1)`).
        y_pred: Predictions of the same shape (y_true may broadcast to it).
        delta: Where the loss turns from quadratic to linear (default 1.0).

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "huber")
    error = y_pred - y_true
    abs_error = jnp.abs(error)
    quadratic = 0.5 * jnp.square(error)
    linear = delta * abs_error - 0.5 * delta ** 2
    return jnp.mean(jnp.where(abs_error <= delta, quadratic, linear), axis=-1)


@export("loopax.losses.log_cosh", "loopax.losses.logcosh", "loopax.metrics.log_cosh")
@elementwise
@op
def log_cosh(y_true, y_pred):
    """mean(log(cosh(y_pred - y_true)), axis=-1), computed without overflow.

    Args:
        y_true: Targets, `(batch, ..., d)` (`(batch,)` is taken as `(batch, 1)`).
        y_pred: Predictions of the same shape (y_true may broadcast to it).

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "log_cosh")
    x = y_pred - y_true
    return jnp.mean(x + jax.nn.softplus(-2.0 * x) - math.log(2.0), axis=-1)


@export("loopax.losses.cosine_similarity")
@op
def cosine_similarity(y_true, y_pred, axis=-1):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): -1 when aligned.

    Args:
        y_true: Vectors, `(batch, ..., d)`.
        y_pred: Vectors of the same shape.
        axis: The axis of the vectors (default -1).

    Returns:
        Per-sample losses, shape `(batch, ...)` (`axis` reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "cosine_similarity")
    return -jnp.sum(l2_normalize(y_true, axis) * l2_normalize(y_pred, axis), axis=axis)


def l2_normalize(x, axis=-1):
    """x / ||x||, with the inverse norm capped at 1/eps (so zero stays zero)."""
    inv_norm = jax.lax.rsqrt(jnp.sum(jnp.square(x), axis=axis, keepdims=True))
    return x * jnp.minimum(inv_norm, 1.0 / EPSILON)


# --------------------------------------------------------------------------
# Probabilistic
# --------------------------------------------------------------------------

@export(
    "loopax.losses.BCE",
    "loopax.losses.bce",
    "loopax.losses.binary_crossentropy",
    "loopax.metrics.binary_crossentropy",
)
@elementwise
@op
def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """mean(-(t log p + (1 - t) log(1 - p)), axis), labels t smoothed towards 0.5.

    Args:
        y_true: 0/1 (or soft) labels, `(batch, ..., d)`.
        y_pred: Probabilities (or logits) of the same shape.
        from_logits: Whether `y_pred` holds logits (default False; probabilities are
            clipped to [eps, 1 - eps]).
        label_smoothing: In [0, 1]: labels become `t · (1 - s) + s / 2` (default 0).
        axis: The axis averaged over (default -1).

    Returns:
        Per-sample losses, shape `(batch, ...)` (`axis` reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "binary_crossentropy")
    y_true = _smooth_binary(y_true, label_smoothing)
    return jnp.mean(_elementwise_bce(y_true, y_pred, from_logits), axis=axis)


def _smooth_binary(y_true, label_smoothing):
    if label_smoothing:
        return y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return y_true


def _elementwise_bce(y_true, y_pred, from_logits):
    if from_logits:
        return -y_true * jax.nn.log_sigmoid(y_pred) - (1.0 - y_true) * jax.nn.log_sigmoid(-y_pred)
    p = jnp.clip(y_pred, EPSILON, 1.0 - EPSILON)
    return -(y_true * jnp.log(p) + (1.0 - y_true) * jnp.log(1.0 - p))


@export("loopax.losses.binary_focal_crossentropy", "loopax.metrics.binary_focal_crossentropy")
@elementwise
@op
def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary crossentropy scaled by (1 - p_t)**gamma (and alpha_t when balancing).

    Args:
        y_true: 0/1 labels, `(batch, ..., d)`.
        y_pred: Probabilities (or logits) of the same shape.
        apply_class_balancing: Weight positives by `alpha` and negatives by
            `1 - alpha` (default False).
        alpha: The positive class's weight when balancing (default 0.25).
        gamma: The focusing exponent (default 2.0; 0 is plain crossentropy).
        from_logits: Whether `y_pred` holds logits (default False).
        label_smoothing: In [0, 1]: labels are smoothed towards 0.5 (default 0).
        axis: The axis averaged over (default -1).

    Returns:
        Per-sample losses, shape `(batch, ...)` (`axis` reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "binary_focal_crossentropy")
    y_true = _smooth_binary(y_true, label_smoothing)
    if from_logits:
        y_pred = jax.nn.sigmoid(y_pred)
    bce = _elementwise_bce(y_true, y_pred, from_logits=False)
    p_t = y_true * y_pred + (1.0 - y_true) * (1.0 - y_pred)
    focal = jnp.power(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return jnp.mean(focal, axis=axis)


def _log_probabilities(y_pred, from_logits, axis):
    if from_logits:
        return jax.nn.log_softmax(y_pred, axis=axis)
    p = y_pred / jnp.sum(y_pred, axis=axis, keepdims=True)
    return jnp.log(jnp.clip(p, EPSILON, 1.0 - EPSILON))


@export("loopax.losses.categorical_crossentropy", "loopax.metrics.categorical_crossentropy")
@op
def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-sum(y_true * log_softmax(y_pred), axis) for one-hot (or soft) labels.

    Without `from_logits`, `y_pred` is normalized to sum to 1 and clipped to
    [eps, 1 - eps]. `label_smoothing` mixes the labels with the uniform one.

    Args:
        y_true: One-hot (or soft) labels, `(batch, ..., classes)`.
        y_pred: Probabilities (or logits) of the same shape.
        from_logits: Whether `y_pred` holds logits (default False).
        label_smoothing: In [0, 1]: labels become `t · (1 - s) + s / classes`
            (default 0).
        axis: The class axis (default -1).

    Returns:
        Per-sample losses, shape `(batch, ...)` (`axis` reduced).

    Raises:
        ValueError: the shapes differ (integer labels need
            `sparse_categorical_crossentropy`), or `axis` is a bool.
    """
    if isinstance(axis, bool):
        raise ValueError(f"categorical_crossentropy: `axis` must be an int, got {axis!r}.")
    y_pred = _as_float(y_pred)
    y_true = _as_float(y_true, y_pred.dtype)
    if y_true.shape != y_pred.shape:
        hint = ""
        if y_true.ndim == y_pred.ndim - 1 or (y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1):
            hint = ("y_true looks like integer class labels: use "
                    "sparse_categorical_crossentropy, or one-hot encode them "
                    "with loopax.utils.to_categorical.")
        raise ValueError(
            f"categorical_crossentropy: y_true has shape {tuple(y_true.shape)} but "
            f"y_pred has shape {tuple(y_pred.shape)}; they must be equal. {hint}".rstrip())
    if y_pred.shape[axis] == 1:
        warnings.warn(
            "categorical_crossentropy: y_pred has one class (shape "
            f"{tuple(y_pred.shape)}), so the loss is always 0. For two classes "
            "use binary_crossentropy.", stacklevel=3)
    if label_smoothing:
        num_classes = y_true.shape[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    return -jnp.sum(y_true * _log_probabilities(y_pred, from_logits, axis), axis=axis)


@export(
    "loopax.losses.sparse_categorical_crossentropy",
    "loopax.metrics.sparse_categorical_crossentropy",
)
@op
def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """categorical_crossentropy with integer labels: y_true (batch,) or (batch, 1)
    against y_pred (batch, classes). Entries labelled `ignore_class` get 0.

    Args:
        y_true: Integer labels, y_pred's shape without the class axis (a trailing axis
            of size 1 is allowed).
        y_pred: Probabilities (or logits), `(batch, ..., classes)`.
        from_logits: Whether `y_pred` holds logits (default False).
        ignore_class: A label whose entries get loss 0 (e.g. padding), or None.
        axis: The class axis (default -1).

    Returns:
        Per-entry losses, y_true's shape without a trailing 1.

    Raises:
        ValueError: the label shape does not fit the predictions' (one-hot labels
            need `categorical_crossentropy`).
    """
    y_pred = _as_float(y_pred)
    y_true = jnp.asarray(y_true)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = jnp.squeeze(y_true, -1)
    if (
        y_pred.ndim < 1
        or y_true.shape
        != y_pred.shape[: axis % y_pred.ndim] + y_pred.shape[axis % y_pred.ndim + 1 :]
    ):
        raise ValueError(
            f"sparse_categorical_crossentropy: y_true has shape {tuple(y_true.shape)} "
            f"and y_pred {tuple(y_pred.shape)}; expected integer labels of y_pred's "
            "shape without the class axis (a trailing axis of size 1 is allowed). "
            "For one-hot labels use categorical_crossentropy.")
    labels = y_true.astype(jnp.int32)
    valid = None
    if ignore_class is not None:
        valid = labels != ignore_class
        labels = jnp.where(valid, labels, 0)
    log_prob = _log_probabilities(y_pred, from_logits, axis)
    one_hot = jax.nn.one_hot(labels, y_pred.shape[axis], dtype=log_prob.dtype, axis=axis)
    losses = -jnp.sum(one_hot * log_prob, axis=axis)
    if valid is not None:
        losses = jnp.where(valid, losses, 0.0)
    return losses


@export(
    "loopax.losses.KLD",
    "loopax.losses.kl_divergence",
    "loopax.losses.kld",
    "loopax.losses.kullback_leibler_divergence",
    "loopax.metrics.kl_divergence",
)
@op
def kl_divergence(y_true, y_pred):
    """sum(t log(t / p), axis=-1) with t and p clipped to [eps, 1].

    Args:
        y_true: Target distributions, `(batch, ..., classes)`.
        y_pred: Predicted distributions of the same shape.

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "kl_divergence")
    y_true = jnp.clip(y_true, EPSILON, 1.0)
    y_pred = jnp.clip(y_pred, EPSILON, 1.0)
    return jnp.sum(y_true * jnp.log(y_true / y_pred), axis=-1)


@export("loopax.losses.poisson", "loopax.metrics.poisson")
@elementwise
@op
def poisson(y_true, y_pred):
    """mean(y_pred - y_true * log(y_pred + eps), axis=-1).

    Args:
        y_true: Targets, `(batch, ..., d)` (`(batch,)` is taken as `(batch, 1)`).
        y_pred: Predictions of the same shape (y_true may broadcast to it).

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "poisson")
    return jnp.mean(y_pred - y_true * jnp.log(y_pred + EPSILON), axis=-1)


# --------------------------------------------------------------------------
# Hinge
# --------------------------------------------------------------------------

def _hinge_labels(y_true):
    """Labels in {0, 1} become {-1, 1}; other labels are kept (Keras's rule)."""
    is_binary = jnp.all((y_true == 0) | (y_true == 1))
    return jnp.where(is_binary, 2.0 * y_true - 1.0, y_true)


@export("loopax.losses.hinge", "loopax.metrics.hinge")
@elementwise
@op
def hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0), axis=-1), labels -1/1 (0/1 converted).

    Args:
        y_true: Labels -1/1 (0/1 labels are converted), `(batch, ..., d)`.
        y_pred: Scores of the same shape.

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "hinge")
    return jnp.mean(jnp.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


@export("loopax.losses.squared_hinge", "loopax.metrics.squared_hinge")
@elementwise
@op
def squared_hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0)**2, axis=-1), labels -1/1 (0/1 converted).

    Args:
        y_true: Labels -1/1 (0/1 labels are converted), `(batch, ..., d)`.
        y_pred: Scores of the same shape.

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "squared_hinge")
    return jnp.mean(jnp.square(jnp.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


@export("loopax.losses.categorical_hinge", "loopax.metrics.categorical_hinge")
@op
def categorical_hinge(y_true, y_pred):
    """max(max((1 - t) * p) - sum(t * p) + 1, 0) over the last axis, one-hot t.

    Args:
        y_true: One-hot labels, `(batch, ..., classes)`.
        y_pred: Scores of the same shape.

    Returns:
        Per-sample losses, shape `(batch, ...)` (the last axis reduced), in
        `y_pred`'s float dtype.

    Raises:
        ValueError: the shapes do not match.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "categorical_hinge")
    pos = jnp.sum(y_true * y_pred, axis=-1)
    neg = jnp.max((1.0 - y_true) * y_pred, axis=-1)
    return jnp.maximum(neg - pos + 1.0, 0.0)


@export(
    "loopax.losses.categorical_focal_crossentropy",
    "loopax.metrics.categorical_focal_crossentropy",
)
@op
def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False,
                                   label_smoothing=0.0, axis=-1):
    """Categorical crossentropy whose terms are scaled by alpha * (1 - p)**gamma,
    so confidently right classes count less (focal loss, Lin et al. 2017).

    Args:
        y_true: one-hot (or soft) labels, shape (batch, classes).
        y_pred: probabilities (normalized to sum to 1, clipped to
            [eps, 1 - eps]), or logits with `from_logits`.
        alpha: the weight of every class term.
        gamma: the focusing exponent (0 gives alpha * crossentropy).
        from_logits: apply a softmax along `axis` first.
        label_smoothing: mix the labels with the uniform distribution.
        axis: the class axis.

    Returns:
        Per-sample losses, `axis` reduced: shape (batch,).
    """
    if isinstance(axis, bool):
        raise ValueError(f"categorical_focal_crossentropy: `axis` must be an int, got {axis!r}.")
    y_pred = _as_float(y_pred)
    y_true = _as_float(y_true, y_pred.dtype)
    check_same_shape(y_true, y_pred, "categorical_focal_crossentropy",
                     "Pass one-hot labels (loopax.utils.to_categorical).")
    if y_pred.shape[axis] == 1:
        warnings.warn(
            "categorical_focal_crossentropy: y_pred has one class (shape "
            f"{tuple(y_pred.shape)}); for two classes use binary_focal_crossentropy.",
            stacklevel=3)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_true.shape[axis]
    if from_logits:
        y_pred = jax.nn.softmax(y_pred, axis=axis)
    p = jnp.clip(y_pred / jnp.sum(y_pred, axis=axis, keepdims=True), EPSILON, 1.0 - EPSILON)
    return jnp.sum(alpha * jnp.power(1.0 - p, gamma) * (-y_true * jnp.log(p)), axis=axis)


@export("loopax.losses.categorical_generalized_cross_entropy")
@op
def categorical_generalized_cross_entropy(y_true, y_pred, q):
    """The generalized crossentropy (1 - p**q) / q of the true class's
    probability p (Zhang & Sabuncu 2018): crossentropy as q -> 0, the MAE
    (robust to noisy labels) at q = 1.

    Args:
        y_true: integer class ids, shape (batch,) (or (batch, 1)).
        y_pred: class probabilities, shape (batch, classes).
        q: in (0, 1).

    Returns:
        Per-sample losses, shape (batch,).
    """
    y_pred = _as_float(y_pred)
    y_true = jnp.asarray(y_true)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1 and y_pred.shape[-1] != 1:
        y_true = jnp.squeeze(y_true, -1)
    if y_true.shape != y_pred.shape[:-1]:
        raise ValueError(
            f"categorical_generalized_cross_entropy: y_true has shape {tuple(y_true.shape)} "
            f"and y_pred {tuple(y_pred.shape)}; expected integer class ids of shape "
            f"{tuple(y_pred.shape[:-1])}.")
    one_hot = jax.nn.one_hot(y_true.astype(jnp.int32), y_pred.shape[-1], dtype=y_pred.dtype)
    p = jnp.sum(y_pred * one_hot, axis=-1)
    return (1 - jnp.power(p, q)) / q


@export("loopax.losses.dice")
@op
def dice(y_true, y_pred, axis=None):
    """1 - the Dice coefficient 2 |y_true . y_pred| / (|y_true| + |y_pred|)
    (sums along `axis`; eps 1e-7 in the denominator), for segmentation.

    Args:
        y_true: 0/1 (or soft) masks.
        y_pred: predicted probabilities, same shape.
        axis: axes to sum over; None (default): all of them, one value for
            the whole batch.

    Returns:
        The loss, `axis` reduced (a scalar with `axis=None`).
    """
    y_true, y_pred = _prepare(y_true, y_pred, "dice")
    overlap = jnp.sum(y_true * y_pred, axis=axis)
    total = jnp.sum(y_true, axis=axis) + jnp.sum(y_pred, axis=axis)
    return 1 - 2.0 * overlap / (total + EPSILON)


@export("loopax.losses.tversky")
@op
def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """1 - the Tversky index tp / (tp + alpha fp + beta fn), where
    tp = sum(y_true y_pred), fp = sum(y_true (1 - y_pred)) and
    fn = sum((1 - y_true) y_pred) along `axis` (Keras's naming; eps 1e-7 in
    the denominator). alpha = beta = 0.5 is the Dice loss.

    Args:
        y_true: 0/1 (or soft) masks.
        y_pred: predicted probabilities, same shape.
        alpha, beta: the weights of the two kinds of error.
        axis: axes to sum over; None (default): all of them.

    Returns:
        The loss, `axis` reduced (a scalar with `axis=None`).
    """
    y_true, y_pred = _prepare(y_true, y_pred, "tversky")
    tp = jnp.sum(y_true * y_pred, axis=axis)
    fp = jnp.sum(y_true * (1 - y_pred), axis=axis)
    fn = jnp.sum((1 - y_true) * y_pred, axis=axis)
    return 1 - tp / (tp + alpha * fp + beta * fn + EPSILON)


def _circle(y_true, y_pred, ref_labels=None, ref_embeddings=None, remove_diagonal=True,
            gamma=80.0, margin=0.4):
    """(per-sample Circle losses, mask of the samples with a loss > 0)."""
    y_pred = _as_float(y_pred)
    labels = jnp.ravel(jnp.asarray(y_true).astype(jnp.int32))
    refs = y_pred if ref_embeddings is None else _as_float(ref_embeddings, y_pred.dtype)
    ref_labels = labels if ref_labels is None else \
        jnp.ravel(jnp.asarray(ref_labels).astype(jnp.int32))
    if y_pred.ndim != 2 or labels.shape[0] != y_pred.shape[0]:
        raise ValueError(
            f"circle: expected embeddings y_pred of shape (batch, dim) and one integer "
            f"label per row; got y_true {tuple(jnp.shape(y_true))} and y_pred "
            f"{tuple(y_pred.shape)}.")
    distance = jnp.maximum(1 - y_pred @ refs.T, 0.0)     # cosine distance of unit vectors
    positive = labels[:, None] == ref_labels[None, :]
    negative = ~positive
    if remove_diagonal:
        positive = positive & ~jnp.eye(*positive.shape, dtype=bool)
    # Each pair's weight grows with its distance from its optimum (margin for
    # positives, 1 + margin for negatives), and its score is measured from a
    # decision margin (margin, 1 - margin).
    pos_weight = jnp.maximum((margin + distance) * positive, 0.0)
    neg_weight = jnp.maximum((1 + margin - distance) * negative, 0.0)
    pos_logits = -gamma * pos_weight * (margin - distance)
    neg_logits = gamma * neg_weight * (1 - margin - distance)
    pos_term = jax.nn.logsumexp(jnp.where(positive, pos_logits, -jnp.inf), axis=1)
    neg_term = jax.nn.logsumexp(jnp.where(negative, neg_logits, -jnp.inf), axis=1)
    losses = jax.nn.softplus(pos_term + neg_term)
    return losses, losses > 0


@export("loopax.losses.circle")
@op
def circle(y_true, y_pred, ref_labels=None, ref_embeddings=None, remove_diagonal=True,
           gamma=80.0, margin=0.4):
    """The Circle loss (Sun et al. 2020) of L2-normalized embeddings: for each
    sample, softplus of logsumexp over same-label pairs plus logsumexp over
    other-label pairs of their self-paced, margin-shifted cosine distances.
    Pulls same-label embeddings together and pushes the others apart.

    Args:
        y_true: integer labels, shape (batch,) (or (batch, 1)).
        y_pred: L2-normalized embeddings, shape (batch, dim).
        ref_labels, ref_embeddings: the set to pair with (default: the batch).
        remove_diagonal: do not pair a sample with itself.
        gamma: the scale of the logits.
        margin: the relaxation margin.

    Returns:
        Per-sample losses, shape (batch,). (The `Circle` class averages over
        the samples with a positive loss, as Keras.)
    """
    return _circle(y_true, y_pred, ref_labels, ref_embeddings, remove_diagonal, gamma,
                   margin)[0]


# Short names, as in Keras.
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh
bce = BCE = binary_crossentropy


# --------------------------------------------------------------------------
# Sequences
# --------------------------------------------------------------------------

@export("loopax.losses.ctc")
@op
def ctc(y_true, y_pred):
    """CTC loss of padded label sequences against per-step class logits.

    As in Keras: class 0 is the blank, and also marks padding in `y_true`,
    so each label length is the count of its nonzero entries; every output
    sequence is taken as `max_time` steps long.

    Args:
        y_true: `(batch, max_label_length)` integer labels, 0-padded.
        y_pred: `(batch, max_time, num_classes)` logits (log-softmax is
            applied inside; softmax outputs are accepted the same way, as
            Keras does).

    Returns:
        `(batch,)` losses.

    Raises:
        ValueError: `y_true` is not 2-D or `y_pred` not 3-D.
    """
    if jnp.ndim(y_true) != 2:
        raise ValueError(f"ctc: `y_true` must be (batch, max_label_length) integer labels, "
                         f"got shape {jnp.shape(y_true)}.")
    if jnp.ndim(y_pred) != 3:
        raise ValueError(f"ctc: `y_pred` must be (batch, max_time, num_classes) logits, "
                         f"got shape {jnp.shape(y_pred)}.")
    batch, max_time = jnp.shape(y_pred)[:2]
    label_length = jnp.sum(jnp.asarray(y_true) != 0, axis=-1).astype("int32")
    return _raw(ctc_loss)(y_true, y_pred, label_length,
                          jnp.full((batch,), max_time, "int32"), mask_index=0)


# --------------------------------------------------------------------------
# Classes
# --------------------------------------------------------------------------

def _raw(fn):
    """The pure function behind a loopax op (a loss object is one op already)."""
    return getattr(fn, "__loopax_op__", fn)


@export("loopax.losses.LossFunctionWrapper")
class LossFunctionWrapper(Loss):
    """A `Loss` from a function `fn(y_true, y_pred, **kwargs)` of per-sample losses.

    `y_true` and `y_pred` are first brought to the same rank when they differ
    by a trailing axis of size 1 ((batch,) against (batch, 1)). With an
    element-wise `fn` (MSE, MAE, binary crossentropy, hinge, ...: see
    `elementwise`), (batch,) inputs are treated as (batch, 1), so
    `sample_weight` and the "sum" and "none" reductions see one loss per
    sample (Keras would first reduce such a batch to one value).

    Args:
        fn: `fn(y_true, y_pred, **kwargs)` -> per-sample losses.
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name ; None is `fn.__name__`.
        dtype: The dtype the loss computes in; None is `floatx()`.
        **kwargs: Passed to `fn` on every call (and saved in the config).

    Raises:
        TypeError: `fn` is not callable.
    """

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"LossFunctionWrapper: `fn` must be callable, got {fn!r}.")
        super().__init__(name=name or getattr(fn, "__name__", None),
                         reduction=reduction, dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        if is_elementwise(self.fn) and y_true.ndim == 1 and y_pred.ndim == 1:
            y_true, y_pred = y_true[:, None], y_pred[:, None]
        return _raw(self.fn)(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        if type(self) is LossFunctionWrapper:
            config["fn"] = getattr(self.fn, "__name__", self.fn)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if cls is LossFunctionWrapper and isinstance(config.get("fn"), str):
            from loopax.src.losses import get
            config["fn"] = get(config["fn"])
        return cls(**config)


_R = "sum_over_batch_size"


@export("loopax.losses.MeanSquaredError")
class MeanSquaredError(LossFunctionWrapper):
    """Mean of squared errors over the last axis.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "mean_squared_error").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


@export("loopax.losses.MeanAbsoluteError")
class MeanAbsoluteError(LossFunctionWrapper):
    """Mean of absolute errors over the last axis.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "mean_absolute_error").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


@export("loopax.losses.MeanAbsolutePercentageError")
class MeanAbsolutePercentageError(LossFunctionWrapper):
    """100 * mean |(y_true - y_pred) / y_true| over the last axis.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "mean_absolute_percentage_error").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name,
                         dtype=dtype)


@export("loopax.losses.MeanSquaredLogarithmicError")
class MeanSquaredLogarithmicError(LossFunctionWrapper):
    """Mean of (log(1 + y_pred) - log(1 + y_true))**2 over the last axis.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "mean_squared_logarithmic_error").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name,
                         dtype=dtype)


@export("loopax.losses.Huber")
class Huber(LossFunctionWrapper):
    """Quadratic within `delta` of the target, linear beyond.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        delta: Where the loss turns from quadratic to linear (default 1.0).
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "huber_loss").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, delta=1.0, reduction=_R, name="huber_loss", dtype=None):
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)


@export("loopax.losses.LogCosh")
class LogCosh(LossFunctionWrapper):
    """Mean of log(cosh(y_pred - y_true)) over the last axis.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "log_cosh").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="log_cosh", dtype=None):
        super().__init__(log_cosh, reduction=reduction, name=name, dtype=dtype)


@export("loopax.losses.CosineSimilarity")
class CosineSimilarity(LossFunctionWrapper):
    """Negative cosine similarity along `axis` (-1 when aligned).

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        axis: The axis of the vectors (default -1).
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "cosine_similarity").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, axis=-1, reduction=_R, name="cosine_similarity", dtype=None):
        super().__init__(cosine_similarity, reduction=reduction, name=name, dtype=dtype,
                         axis=axis)


@export("loopax.losses.BinaryCrossentropy")
class BinaryCrossentropy(LossFunctionWrapper):
    """Crossentropy of 0/1 labels and probabilities (or logits, `from_logits=True`).

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        from_logits: Whether `y_pred` holds logits (default False).
        label_smoothing: In [0, 1]; labels are smoothed towards 0.5 (default 0).
        axis: The axis averaged over (default -1).
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "binary_crossentropy").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction=_R,
                 name="binary_crossentropy", dtype=None):
        super().__init__(binary_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


@export("loopax.losses.BinaryFocalCrossentropy")
class BinaryFocalCrossentropy(LossFunctionWrapper):
    """Binary crossentropy scaled by (1 - p_t)**gamma, so easy examples count less.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        apply_class_balancing: Weight positives by `alpha`, negatives by `1 - alpha`
            (default False).
        alpha: The positive class's weight when balancing (default 0.25).
        gamma: The focusing exponent (default 2.0).
        from_logits: Whether `y_pred` holds logits (default False).
        label_smoothing: In [0, 1]; labels are smoothed towards 0.5 (default 0).
        axis: The axis averaged over (default -1).
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "binary_focal_crossentropy").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                 label_smoothing=0.0, axis=-1, reduction=_R,
                 name="binary_focal_crossentropy", dtype=None):
        super().__init__(binary_focal_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, apply_class_balancing=apply_class_balancing,
                         alpha=alpha, gamma=gamma, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


@export("loopax.losses.CategoricalCrossentropy")
class CategoricalCrossentropy(LossFunctionWrapper):
    """Crossentropy of one-hot labels and class probabilities (or logits).

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        from_logits: Whether `y_pred` holds logits (default False).
        label_smoothing: In [0, 1]; labels are mixed with the uniform one (default 0).
        axis: The class axis (default -1).
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "categorical_crossentropy").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction=_R,
                 name="categorical_crossentropy", dtype=None):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


@export("loopax.losses.SparseCategoricalCrossentropy")
class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Crossentropy of integer labels and class probabilities (or logits).

    With `ignore_class`, entries of that label get no loss and the mean
    reductions average over the other entries only.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        from_logits: Whether `y_pred` holds logits (default False).
        ignore_class: A label whose entries get no loss (e.g. padding), or None.
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "sparse_categorical_crossentropy").
        dtype: The dtype the loss computes in; None is `floatx()`.
        axis: The class axis (default -1).
    """

    def __init__(self, from_logits=False, ignore_class=None, reduction=_R,
                 name="sparse_categorical_crossentropy", dtype=None, axis=-1):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=from_logits, ignore_class=ignore_class,
                         axis=axis)

    def call(self, y_true, y_pred):
        # No rank fix: the function takes labels of shape (batch,) and (batch, 1).
        return _raw(self.fn)(y_true, y_pred, **self._fn_kwargs)

    def _losses_and_mask(self, y_true, y_pred):
        losses = self.call(y_true, y_pred)
        ignore = self._fn_kwargs["ignore_class"]
        if ignore is None:
            return losses, None
        labels = y_true
        if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
            labels = jnp.squeeze(labels, -1)
        return losses, labels != ignore


@export("loopax.losses.KLDivergence")
class KLDivergence(LossFunctionWrapper):
    """Kullback-Leibler divergence sum(t log(t / p)) over the last axis.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "kl_divergence").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, reduction=reduction, name=name, dtype=dtype)


@export("loopax.losses.Poisson")
class Poisson(LossFunctionWrapper):
    """Mean of y_pred - y_true log(y_pred) over the last axis.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "poisson").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="poisson", dtype=None):
        super().__init__(poisson, reduction=reduction, name=name, dtype=dtype)


@export("loopax.losses.Hinge")
class Hinge(LossFunctionWrapper):
    """Mean of max(1 - y_true y_pred, 0); labels -1/1 (0/1 are converted).

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "hinge").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="hinge", dtype=None):
        super().__init__(hinge, reduction=reduction, name=name, dtype=dtype)


@export("loopax.losses.SquaredHinge")
class SquaredHinge(LossFunctionWrapper):
    """Mean of max(1 - y_true y_pred, 0)**2; labels -1/1 (0/1 are converted).

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "squared_hinge").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, reduction=reduction, name=name, dtype=dtype)


@export("loopax.losses.CategoricalHinge")
class CategoricalHinge(LossFunctionWrapper):
    """max(largest wrong-class score - true-class score + 1, 0), one-hot labels.

    `loss(y_true, y_pred, sample_weight=None)` returns the reduced loss (a scalar
    unless `reduction="none"`).

    Args:
        reduction: How per-sample losses become the loss: "sum_over_batch_size" (the
            default), "sum", "mean", "mean_with_sample_weight", "none" or None.
        name: The loss's name (default "categorical_hinge").
        dtype: The dtype the loss computes in; None is `floatx()`.
    """

    def __init__(self, reduction=_R, name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, reduction=reduction, name=name, dtype=dtype)


@export("loopax.losses.CategoricalFocalCrossentropy")
class CategoricalFocalCrossentropy(LossFunctionWrapper):
    """`categorical_focal_crossentropy`: crossentropy scaled by
    alpha * (1 - p)**gamma per class, one-hot labels.

    Args:
        alpha, gamma, from_logits, label_smoothing, axis: as the function.
        reduction, name, dtype: as `Loss`.
    """

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction=_R, name="categorical_focal_crossentropy", dtype=None):
        super().__init__(categorical_focal_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, alpha=alpha, gamma=gamma, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


@export("loopax.losses.CategoricalGeneralizedCrossEntropy")
class CategoricalGeneralizedCrossEntropy(LossFunctionWrapper):
    """`categorical_generalized_cross_entropy`: (1 - p**q) / q of the true
    class's probability, integer labels; robust to noisy labels.

    Args:
        q: in (0, 1): near 0 behaves like crossentropy, 1 like MAE.
        reduction, name, dtype: as `Loss`.

    Raises:
        ValueError: `q` outside (0, 1).
    """

    def __init__(self, q=0.5, reduction=_R, name="categorical_generalized_cross_entropy",
                 dtype=None):
        if not 0 < q < 1:
            raise ValueError(f"CategoricalGeneralizedCrossEntropy: `q` must be in (0, 1), "
                             f"got {q!r}.")
        super().__init__(categorical_generalized_cross_entropy, reduction=reduction, name=name,
                         dtype=dtype, q=q)

    def call(self, y_true, y_pred):
        # No rank fix: the function takes labels of shape (batch,) and (batch, 1).
        return _raw(self.fn)(y_true, y_pred, **self._fn_kwargs)


@export("loopax.losses.Dice")
class Dice(LossFunctionWrapper):
    """`dice`: 1 - the Dice coefficient of masks and predictions.

    Args:
        axis: axes the sums run over; None: all (one value per batch).
        reduction, name, dtype: as `Loss`.
    """

    def __init__(self, reduction=_R, name="dice", axis=None, dtype=None):
        super().__init__(dice, reduction=reduction, name=name, dtype=dtype, axis=axis)


@export("loopax.losses.Tversky")
class Tversky(LossFunctionWrapper):
    """`tversky`: 1 - the Tversky index, weighting the two kinds of error
    by `alpha` and `beta`.

    Args:
        alpha, beta, axis: as the function.
        reduction, name, dtype: as `Loss`.
    """

    def __init__(self, alpha=0.5, beta=0.5, reduction=_R, name="tversky", axis=None,
                 dtype=None):
        super().__init__(tversky, reduction=reduction, name=name, dtype=dtype, alpha=alpha,
                         beta=beta, axis=axis)


@export("loopax.losses.Circle")
class Circle(LossFunctionWrapper):
    """`circle`: the Circle loss of L2-normalized embeddings against integer
    labels, pairs taken within the batch. Samples whose loss is 0 (nothing
    to pull or push) do not count in the mean reductions, as in Keras.

    Args:
        gamma, margin, remove_diagonal: as the function.
        reduction, name, dtype: as `Loss`.
    """

    def __init__(self, gamma=80.0, margin=0.4, remove_diagonal=True, reduction=_R,
                 name="circle", dtype=None):
        super().__init__(circle, reduction=reduction, name=name, dtype=dtype, gamma=gamma,
                         margin=margin, remove_diagonal=remove_diagonal)

    def _losses_and_mask(self, y_true, y_pred):
        return _circle(y_true, y_pred, **self._fn_kwargs)


@export("loopax.losses.CTC")
class CTC(LossFunctionWrapper):
    """Connectionist temporal classification loss (see `ctc`): y_true
    `(batch, max_label_length)` 0-padded labels, y_pred `(batch, max_time,
    num_classes)` logits or softmax outputs, class 0 the blank.

    Args:
        reduction, name, dtype: as `Loss`.
    """

    def __init__(self, reduction=_R, name="ctc", dtype=None):
        super().__init__(ctc, reduction=reduction, name=name, dtype=dtype)


LOSS_CLASSES = (
    MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError, Huber, LogCosh, CosineSimilarity,
    BinaryCrossentropy, BinaryFocalCrossentropy, CategoricalCrossentropy,
    SparseCategoricalCrossentropy, KLDivergence, Poisson, Hinge, SquaredHinge,
    CategoricalHinge, CategoricalFocalCrossentropy, CategoricalGeneralizedCrossEntropy, Dice,
    Tversky, Circle, CTC,
)

LOSS_FUNCTIONS = (
    mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
    mean_squared_logarithmic_error, huber, log_cosh, cosine_similarity,
    binary_crossentropy, binary_focal_crossentropy, categorical_crossentropy,
    sparse_categorical_crossentropy, kl_divergence, poisson, hinge, squared_hinge,
    categorical_hinge, categorical_focal_crossentropy, categorical_generalized_cross_entropy,
    dice, tversky, circle, ctc,
)
