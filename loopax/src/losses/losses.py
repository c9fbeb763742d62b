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
from loopax.src.losses.loss import EPSILON, Loss, check_same_shape, squeeze_or_expand_to_same_rank
from loopax.src.ops.nn import ctc_loss
from loopax.src.tensor import op

__all__ = [
    "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error", "huber", "log_cosh", "cosine_similarity",
    "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
    "sparse_categorical_crossentropy", "kl_divergence", "poisson", "hinge",
    "squared_hinge", "categorical_hinge", "ctc",
    "mse", "MSE", "mae", "MAE", "mape", "MAPE", "msle", "MSLE", "kld", "KLD",
    "kullback_leibler_divergence", "logcosh", "bce", "BCE",
    "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError",
    "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "Huber", "LogCosh",
    "CosineSimilarity", "BinaryCrossentropy", "BinaryFocalCrossentropy",
    "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "KLDivergence",
    "Poisson", "Hinge", "SquaredHinge", "CategoricalHinge", "CTC",
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


def _prepare(y_true, y_pred, who):
    """y_pred as float, y_true in its dtype, ranks fixed, shapes checked."""
    y_pred = _as_float(y_pred)
    y_true = _as_float(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    check_same_shape(y_true, y_pred, who)
    return y_true, y_pred


# --------------------------------------------------------------------------
# Regression
# --------------------------------------------------------------------------

@elementwise
@op
def mean_squared_error(y_true, y_pred):
    """mean((y_true - y_pred)**2, axis=-1)."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_error")
    return jnp.mean(jnp.square(y_true - y_pred), axis=-1)


@elementwise
@op
def mean_absolute_error(y_true, y_pred):
    """mean(|y_true - y_pred|, axis=-1)."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_error")
    return jnp.mean(jnp.abs(y_true - y_pred), axis=-1)


@elementwise
@op
def mean_absolute_percentage_error(y_true, y_pred):
    """100 * mean(|(y_true - y_pred) / max(|y_true|, eps)|, axis=-1)."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_percentage_error")
    diff = jnp.abs((y_true - y_pred) / jnp.maximum(jnp.abs(y_true), EPSILON))
    return 100.0 * jnp.mean(diff, axis=-1)


@elementwise
@op
def mean_squared_logarithmic_error(y_true, y_pred):
    """mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))**2, axis=-1)."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_logarithmic_error")
    first = jnp.log(jnp.maximum(y_pred, EPSILON) + 1.0)
    second = jnp.log(jnp.maximum(y_true, EPSILON) + 1.0)
    return jnp.mean(jnp.square(first - second), axis=-1)


@elementwise
@op
def huber(y_true, y_pred, delta=1.0):
    """mean(0.5 e**2 if |e| <= delta else delta (|e| - 0.5 delta), axis=-1), e = y_pred - y_true."""
    y_true, y_pred = _prepare(y_true, y_pred, "huber")
    error = y_pred - y_true
    abs_error = jnp.abs(error)
    quadratic = 0.5 * jnp.square(error)
    linear = delta * abs_error - 0.5 * delta ** 2
    return jnp.mean(jnp.where(abs_error <= delta, quadratic, linear), axis=-1)


@elementwise
@op
def log_cosh(y_true, y_pred):
    """mean(log(cosh(y_pred - y_true)), axis=-1), computed without overflow."""
    y_true, y_pred = _prepare(y_true, y_pred, "log_cosh")
    x = y_pred - y_true
    return jnp.mean(x + jax.nn.softplus(-2.0 * x) - math.log(2.0), axis=-1)


@op
def cosine_similarity(y_true, y_pred, axis=-1):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): -1 when aligned."""
    y_true, y_pred = _prepare(y_true, y_pred, "cosine_similarity")
    return -jnp.sum(l2_normalize(y_true, axis) * l2_normalize(y_pred, axis), axis=axis)


def l2_normalize(x, axis=-1):
    """x / ||x||, with the inverse norm capped at 1/eps (so zero stays zero)."""
    inv_norm = jax.lax.rsqrt(jnp.sum(jnp.square(x), axis=axis, keepdims=True))
    return x * jnp.minimum(inv_norm, 1.0 / EPSILON)


# --------------------------------------------------------------------------
# Probabilistic
# --------------------------------------------------------------------------

@elementwise
@op
def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """mean(-(t log p + (1 - t) log(1 - p)), axis), labels t smoothed towards 0.5."""
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


@elementwise
@op
def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary crossentropy scaled by (1 - p_t)**gamma (and alpha_t when balancing)."""
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


@op
def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-sum(y_true * log_softmax(y_pred), axis) for one-hot (or soft) labels.

    Without `from_logits`, `y_pred` is normalized to sum to 1 and clipped to
    [eps, 1 - eps]. `label_smoothing` mixes the labels with the uniform one.
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


@op
def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """categorical_crossentropy with integer labels: y_true (batch,) or (batch, 1)
    against y_pred (batch, classes). Entries labelled `ignore_class` get 0."""
    y_pred = _as_float(y_pred)
    y_true = jnp.asarray(y_true)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = jnp.squeeze(y_true, -1)
    if y_pred.ndim < 1 or y_true.shape != y_pred.shape[:axis % y_pred.ndim] + y_pred.shape[axis % y_pred.ndim + 1:]:
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


@op
def kl_divergence(y_true, y_pred):
    """sum(t log(t / p), axis=-1) with t and p clipped to [eps, 1]."""
    y_true, y_pred = _prepare(y_true, y_pred, "kl_divergence")
    y_true = jnp.clip(y_true, EPSILON, 1.0)
    y_pred = jnp.clip(y_pred, EPSILON, 1.0)
    return jnp.sum(y_true * jnp.log(y_true / y_pred), axis=-1)


@elementwise
@op
def poisson(y_true, y_pred):
    """mean(y_pred - y_true * log(y_pred + eps), axis=-1)."""
    y_true, y_pred = _prepare(y_true, y_pred, "poisson")
    return jnp.mean(y_pred - y_true * jnp.log(y_pred + EPSILON), axis=-1)


# --------------------------------------------------------------------------
# Hinge
# --------------------------------------------------------------------------

def _hinge_labels(y_true):
    """Labels in {0, 1} become {-1, 1}; other labels are kept (Keras's rule)."""
    is_binary = jnp.all((y_true == 0) | (y_true == 1))
    return jnp.where(is_binary, 2.0 * y_true - 1.0, y_true)


@elementwise
@op
def hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0), axis=-1), labels -1/1 (0/1 converted)."""
    y_true, y_pred = _prepare(y_true, y_pred, "hinge")
    return jnp.mean(jnp.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


@elementwise
@op
def squared_hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0)**2, axis=-1), labels -1/1 (0/1 converted)."""
    y_true, y_pred = _prepare(y_true, y_pred, "squared_hinge")
    return jnp.mean(jnp.square(jnp.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


@op
def categorical_hinge(y_true, y_pred):
    """max(max((1 - t) * p) - sum(t * p) + 1, 0) over the last axis, one-hot t."""
    y_true, y_pred = _prepare(y_true, y_pred, "categorical_hinge")
    pos = jnp.sum(y_true * y_pred, axis=-1)
    neg = jnp.max((1.0 - y_true) * y_pred, axis=-1)
    return jnp.maximum(neg - pos + 1.0, 0.0)


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


class LossFunctionWrapper(Loss):
    """A `Loss` from a function `fn(y_true, y_pred, **kwargs)` of per-sample losses.

    `y_true` and `y_pred` are first brought to the same rank when they differ
    by a trailing axis of size 1 ((batch,) against (batch, 1)). With an
    element-wise `fn` (MSE, MAE, binary crossentropy, hinge, ...: see
    `elementwise`), (batch,) inputs are treated as (batch, 1), so
    `sample_weight` and the "sum" and "none" reductions see one loss per
    sample (Keras would first reduce such a batch to one value).
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


class MeanSquaredError(LossFunctionWrapper):
    """Mean of squared errors over the last axis."""

    def __init__(self, reduction=_R, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(LossFunctionWrapper):
    """Mean of absolute errors over the last axis."""

    def __init__(self, reduction=_R, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsolutePercentageError(LossFunctionWrapper):
    """100 * mean |(y_true - y_pred) / y_true| over the last axis."""

    def __init__(self, reduction=_R, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name,
                         dtype=dtype)


class MeanSquaredLogarithmicError(LossFunctionWrapper):
    """Mean of (log(1 + y_pred) - log(1 + y_true))**2 over the last axis."""

    def __init__(self, reduction=_R, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name,
                         dtype=dtype)


class Huber(LossFunctionWrapper):
    """Quadratic within `delta` of the target, linear beyond."""

    def __init__(self, delta=1.0, reduction=_R, name="huber_loss", dtype=None):
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)


class LogCosh(LossFunctionWrapper):
    """Mean of log(cosh(y_pred - y_true)) over the last axis."""

    def __init__(self, reduction=_R, name="log_cosh", dtype=None):
        super().__init__(log_cosh, reduction=reduction, name=name, dtype=dtype)


class CosineSimilarity(LossFunctionWrapper):
    """Negative cosine similarity along `axis` (-1 when aligned)."""

    def __init__(self, axis=-1, reduction=_R, name="cosine_similarity", dtype=None):
        super().__init__(cosine_similarity, reduction=reduction, name=name, dtype=dtype,
                         axis=axis)


class BinaryCrossentropy(LossFunctionWrapper):
    """Crossentropy of 0/1 labels and probabilities (or logits, `from_logits=True`)."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction=_R,
                 name="binary_crossentropy", dtype=None):
        super().__init__(binary_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class BinaryFocalCrossentropy(LossFunctionWrapper):
    """Binary crossentropy scaled by (1 - p_t)**gamma, so easy examples count less."""

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                 label_smoothing=0.0, axis=-1, reduction=_R,
                 name="binary_focal_crossentropy", dtype=None):
        super().__init__(binary_focal_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, apply_class_balancing=apply_class_balancing,
                         alpha=alpha, gamma=gamma, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class CategoricalCrossentropy(LossFunctionWrapper):
    """Crossentropy of one-hot labels and class probabilities (or logits)."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction=_R,
                 name="categorical_crossentropy", dtype=None):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Crossentropy of integer labels and class probabilities (or logits).

    With `ignore_class`, entries of that label get no loss and the mean
    reductions average over the other entries only.
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


class KLDivergence(LossFunctionWrapper):
    """Kullback-Leibler divergence sum(t log(t / p)) over the last axis."""

    def __init__(self, reduction=_R, name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, reduction=reduction, name=name, dtype=dtype)


class Poisson(LossFunctionWrapper):
    """Mean of y_pred - y_true log(y_pred) over the last axis."""

    def __init__(self, reduction=_R, name="poisson", dtype=None):
        super().__init__(poisson, reduction=reduction, name=name, dtype=dtype)


class Hinge(LossFunctionWrapper):
    """Mean of max(1 - y_true y_pred, 0); labels -1/1 (0/1 are converted)."""

    def __init__(self, reduction=_R, name="hinge", dtype=None):
        super().__init__(hinge, reduction=reduction, name=name, dtype=dtype)


class SquaredHinge(LossFunctionWrapper):
    """Mean of max(1 - y_true y_pred, 0)**2; labels -1/1 (0/1 are converted)."""

    def __init__(self, reduction=_R, name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, reduction=reduction, name=name, dtype=dtype)


class CategoricalHinge(LossFunctionWrapper):
    """max(largest wrong-class score - true-class score + 1, 0), one-hot labels."""

    def __init__(self, reduction=_R, name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, reduction=reduction, name=name, dtype=dtype)


class CTC(LossFunctionWrapper):
    """Connectionist temporal classification loss (see `ctc`): y_true
    `(batch, max_label_length)` 0-padded labels, y_pred `(batch, max_time,
    num_classes)` logits, class 0 the blank."""

    def __init__(self, reduction=_R, name="ctc", dtype=None):
        super().__init__(ctc, reduction=reduction, name=name, dtype=dtype)


LOSS_CLASSES = (
    MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError, Huber, LogCosh, CosineSimilarity,
    BinaryCrossentropy, BinaryFocalCrossentropy, CategoricalCrossentropy,
    SparseCategoricalCrossentropy, KLDivergence, Poisson, Hinge, SquaredHinge,
    CategoricalHinge, CTC,
)

LOSS_FUNCTIONS = (
    mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
    mean_squared_logarithmic_error, huber, log_cosh, cosine_similarity,
    binary_crossentropy, binary_focal_crossentropy, categorical_crossentropy,
    sparse_categorical_crossentropy, kl_divergence, poisson, hinge, squared_hinge,
    categorical_hinge, ctc,
)
