"""`Loss`, the base of every loss, and how per-sample losses are reduced.

A loss object is called as `loss(y_true, y_pred, sample_weight=None)`:

1. `y_true` and `y_pred` become arrays of the loss's dtype (float32 unless
   `dtype=` says otherwise);
2. `call(y_true, y_pred)` computes the per-sample losses, e.g. shape (batch,)
   for (batch, d) inputs;
3. `sample_weight` multiplies them (a (batch,) or (batch, 1) weight applies
   per sample; a weight of the losses' shape applies per element);
4. `reduction` reduces: "sum_over_batch_size" (default) and "mean" divide the
   weighted sum by the number of loss elements, "mean_with_sample_weight" by
   the sum of the weights, "sum" sums, "none" / None returns them as they are.

The whole call is one loopax op, so a recording `GradientTape` records a loss
as a single node, and it is pure JAX, so it runs under `jax.jit`.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from loopax.src import dtypes
from loopax.src.api_export import export
from loopax.src.array_types import Array, ArrayLike, DTypeLike
from loopax.src.layers.masking import get_keras_mask
from loopax.src.module import _snake_case
from loopax.src.naming import unique_name
from loopax.src.state import _state
from loopax.src.tensor import as_tensor, op, unwrap

EPSILON = dtypes.EPSILON  # the clip for log() of probabilities

REDUCTIONS = ("sum", "sum_over_batch_size", "mean", "mean_with_sample_weight", "none")


def standardize_reduction(reduction):
    """`reduction` checked; None becomes "none"."""
    if reduction is None:
        return "none"
    if reduction == "auto":  # tf.keras's default, kept for TF-style code
        return "sum_over_batch_size"
    if reduction not in REDUCTIONS:
        raise ValueError(
            f"Invalid value for argument `reduction`: {reduction!r}. Expected "
            f"one of {list(REDUCTIONS) + [None]}.")
    return reduction


@export("loopax.losses.Reduction")
class Reduction:
    """tf.keras's (Keras 2) names of the `reduction=` strings, as TensorFlow's
    `tf.keras.losses.Reduction` keeps them: `Reduction.NONE` is "none", ...
    (issue 36: the distributed custom-training tutorial passes
    `reduction=tf.keras.losses.Reduction.NONE`)."""
    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction key {key!r}; expected one of {cls.all()}.")


@export("loopax.losses.Loss")
class Loss:
    """Base class for losses: subclass it and implement `call(y_true, y_pred)`.

    Args:
        name: the loss's name (defaults to the class name in snake case).
        reduction: "sum_over_batch_size" (default), "sum", "mean",
            "mean_with_sample_weight", "none" or None.
        dtype: the dtype the loss computes in (default: `floatx()`).

    Raises:
        ValueError: `reduction` is not one of the above.
    """

    def __init__(self, name: str | None = None, reduction: str | None = "sum_over_batch_size",
                 dtype: DTypeLike = None):
        self.name = name or unique_name(_snake_case(type(self).__name__))
        self.reduction = standardize_reduction(reduction)
        self._dtype = dtypes.standardize(dtype) if dtype is not None else dtypes.floatx()

    @property
    def dtype(self) -> str:
        """The dtype the loss computes in (inputs are cast to it)."""
        return self._dtype

    def __call__(self, y_true: ArrayLike, y_pred: ArrayLike,
                 sample_weight: ArrayLike | None = None) -> Array:
        """The reduced loss (a scalar unless `reduction` is "none").

        Entries that the mask of `y_pred` (`_keras_mask`, see layers.Masking) marks as
        padding do not count, as in Keras.

        Args:
            y_true: The targets, e.g. `(batch, d)`.
            y_pred: The predictions, e.g. `(batch, d)`.
            sample_weight: Per-sample weights `(batch,)`/`(batch, 1)`, or per-element
                weights of the per-sample losses' shape; None weighs all equally.

        Returns:
            A scalar of `dtype` (with `reduction="none"`: the per-sample losses, e.g.
            `(batch,)`).
        """
        value = _loss_value(self, y_true, y_pred, sample_weight, get_keras_mask(y_pred))
        # Called eagerly (no state scope, not traced) the loss is a Tensor, as
        # TensorFlow's: `loss_fn(y, logits).numpy()`.
        return value if _state.scopes else as_tensor(value)

    def call(self, y_true: Array, y_pred: Array) -> Array:
        """Per-sample losses of `y_true` and `y_pred`; subclasses implement it.

        Args:
            y_true: The targets, as an array of `self.dtype`.
            y_pred: The predictions, as an array of `self.dtype`.

        Returns:
            The unreduced losses, usually `y_pred`'s shape less the last axis.

        Raises:
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement `call(y_true, y_pred)`.")

    def _losses_and_mask(self, y_true, y_pred):
        """Per-sample losses and an optional mask of the entries that count."""
        return self.call(y_true, y_pred), None

    def get_config(self) -> dict:
        """The constructor arguments that re-create this loss.

        Returns:
            A JSON-serializable dict (`name`, `reduction`, `dtype`, plus a subclass's own).
        """
        return {"name": self.name, "reduction": self.reduction, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        """Creates a loss from the dict `get_config` returned.

        Args:
            config: The constructor's keyword arguments.

        Returns:
            A new loss of class `cls`.
        """
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r} reduction={self.reduction!r}>"


@op
def _loss_value(loss, y_true, y_pred, sample_weight, input_mask=None):
    y_pred = dtypes.asarray(unwrap(y_pred), dtype=loss.dtype)
    y_true = dtypes.asarray(unwrap(y_true), dtype=loss.dtype)
    values, mask = loss._losses_and_mask(y_true, y_pred)
    if input_mask is not None:
        input_mask = jnp.asarray(unwrap(input_mask), bool)
        mask = input_mask if mask is None else input_mask & mask
    return reduce_weighted_values(values, sample_weight, mask=mask,
                                  reduction=loss.reduction, dtype=loss.dtype,
                                  who=loss.name)


# --------------------------------------------------------------------------
# Shapes and reduction
# --------------------------------------------------------------------------

def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Makes ranks equal when they differ by a trailing axis of size 1.

    (batch,) against (batch, 1): the rank-1 side gains an axis when
    `expand_rank_1`, else the other side loses its trailing 1 (Keras's rule).
    """
    r1, r2 = jnp.ndim(x1), jnp.ndim(x2)
    if r1 == r2 + 1 and jnp.shape(x1)[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = jnp.expand_dims(x2, -1)
        else:
            x1 = jnp.squeeze(x1, -1)
    elif r2 == r1 + 1 and jnp.shape(x2)[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = jnp.expand_dims(x1, -1)
        else:
            x2 = jnp.squeeze(x2, -1)
    return x1, x2


def broadcast_sample_weight(values, sample_weight, who="loss"):
    """(values, weight) with `weight` broadcastable to `values`' shape.

    A weight of lower rank applies per sample: (batch,) against (batch, T)
    becomes (batch, 1). Anything that would not broadcast into `values`
    raises a ValueError naming both shapes.
    """
    values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
    vs, ws = tuple(values.shape), tuple(sample_weight.shape)
    if len(ws) < len(vs):
        sample_weight = jnp.reshape(sample_weight, ws + (1,) * (len(vs) - len(ws)))
        ws = tuple(sample_weight.shape)
    if vs and not _broadcasts_into(ws, vs):
        raise ValueError(
            f"{who}: `sample_weight` of shape {ws} does not fit the per-sample "
            f"losses of shape {vs}. Pass one weight per sample (shape "
            f"{vs[:1]}) or one per loss element (shape {vs}).")
    return values, sample_weight


def _broadcasts_into(small, big):
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(small[::-1], big[::-1]))


def reduce_values(values, sample_weight=None, reduction="sum_over_batch_size"):
    """Reduces (already weighted) `values` to a scalar as `reduction` says."""
    if reduction == "none" or values.ndim == 0 or values.size == 0:
        return values
    total = jnp.sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = jnp.sum(jnp.broadcast_to(sample_weight, values.shape)).astype(total.dtype)
    else:
        divisor = jnp.asarray(values.size, total.dtype)
    return jnp.where(
        divisor == 0, jnp.zeros_like(total), total / jnp.where(divisor == 0, 1, divisor)
    )


@export("loopax.losses.reduce_weighted_values")
def reduce_weighted_values(values, sample_weight=None, mask=None,
                           reduction="sum_over_batch_size", dtype=None, who="loss"):
    """Weights per-sample `values` by `sample_weight` and `mask`, then reduces.

    A `mask` (True where an entry counts) makes the mean reductions average
    over the valid entries only.

    Args:
        values: Per-sample (or per-entry) losses.
        sample_weight: Weights broadcastable to `values`, or None.
        mask: A boolean mask broadcastable to `values`, or None.
        reduction: "sum_over_batch_size" (the default), "sum", "mean",
            "mean_with_sample_weight", "none" or None.
        dtype: The dtype to compute in; None is `floatx()`.
        who: The name used in error messages.

    Returns:
        The reduced loss: a scalar, or the weighted values with "none".

    Raises:
        ValueError: an unknown `reduction`, or weights that do not fit `values`.
    """
    reduction = standardize_reduction(reduction)
    dtype = dtype or dtypes.floatx()
    values = jnp.asarray(values, dtype=dtype)
    if sample_weight is not None:
        sample_weight = dtypes.asarray(unwrap(sample_weight), dtype=dtype)
    if mask is not None:
        mask = jnp.asarray(mask, dtype=dtype)
        if reduction in ("mean", "sum_over_batch_size"):
            # Valid entries get weight total/valid, so the mean over all
            # entries becomes the mean over the valid ones.
            mask = mask * (mask.size / (jnp.sum(mask) + EPSILON))
        if sample_weight is None:
            sample_weight = mask
        else:
            mask, sample_weight = broadcast_sample_weight(mask, sample_weight, who)
            sample_weight = sample_weight * mask
    if sample_weight is not None:
        values, sample_weight = broadcast_sample_weight(values, sample_weight, who)
        values = values * sample_weight
    return reduce_values(values, sample_weight, reduction)


def check_same_shape(y_true, y_pred, who, hint="", mutual=False):
    """Raises a ValueError naming both shapes unless `y_true` broadcasts into
    `y_pred`'s shape (after the (batch,) vs (batch, 1) rank fix); with `mutual`,
    unless the two broadcast against each other (Keras's elementwise losses: a
    (batch, 1) output against (batch, k) targets; `fit` warns about it)."""
    ts, ps = tuple(np.shape(y_true)), tuple(np.shape(y_pred))
    fits = _broadcasts_into(ts, ps) or mutual and all(
        a == b or 1 in (a, b) for a, b in zip(ts[::-1], ps[::-1]))
    if ts != ps and not fits:
        raise ValueError(
            f"{who}: y_true has shape {ts} but y_pred has shape {ps}; they must "
            f"match (or y_true broadcast to y_pred).{(' ' + hint) if hint else ''}")
