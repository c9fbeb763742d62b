"""Math ops (`keras.ops.math`): top-k, log-sum-exp, special functions and
segment reductions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from loopax.src.array_types import Array, ArrayLike, Axis
from loopax.src.ops.utils import as_array, compiled
from loopax.src.tensor import op, unwrap

_IMPORTED = set(globals())


@op
@compiled("k", "sorted")
def top_k(x: ArrayLike, k: int, sorted: bool = True) -> tuple[Array, Array]:
    """(values, indices) of the `k` largest entries along the last axis,
    largest first.

    Args:
        x: Array `(..., n)`.
        k: How many entries.
        sorted: Accepted for Keras compatibility; results are always sorted.

    Returns:
        `(values, indices)`, each `(..., k)`.

    Raises:
        ValueError: `k` is larger than the last axis.
    """
    x = as_array(x)
    if k > x.shape[-1]:
        raise ValueError(f"top_k: k={k} is larger than the last axis of x {x.shape}.")
    return tuple(lax.top_k(x, k))


@op
@compiled("k")
def in_top_k(targets: ArrayLike, predictions: ArrayLike, k: int) -> Array:
    """Whether each `targets[i]` is among the `k` largest of `predictions[i]`
    (ties with the k-th value count as in).

    Args:
        targets: Integer class ids `(batch,)`.
        predictions: Scores `(batch, classes)`.
        k: How many top entries count.

    Returns:
        A bool array `(batch,)`.
    """
    targets = as_array(targets).astype("int32")
    target_score = jnp.take_along_axis(as_array(predictions), targets[:, None], axis=-1)
    return jnp.sum(predictions > target_score, axis=-1) < k


@op
@compiled("axis", "keepdims")
def logsumexp(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """`log(sum(exp(x)))` over `axis`, computed stably by factoring out the max.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The log-sum-exp values.
    """
    shift = jnp.max(x, axis=axis, keepdims=True)
    shift = lax.stop_gradient(jnp.where(jnp.isfinite(shift), shift, 0))
    out = jnp.log(jnp.sum(jnp.exp(x - shift), axis=axis, keepdims=True)) + shift
    return out if keepdims else jnp.squeeze(out, axis)


@op
def rsqrt(x: ArrayLike) -> Array:
    """`1 / sqrt(x)`.

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape.
    """
    return lax.rsqrt(_float(x))


@op
def erf(x: ArrayLike) -> Array:
    """The error function, elementwise.

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape (float).
    """
    return lax.erf(_float(x))


@op
def erfinv(x: ArrayLike) -> Array:
    """The inverse error function, elementwise (defined on (-1, 1)).

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape (float).
    """
    return lax.erf_inv(_float(x))


@op
@compiled()
def logdet(x: ArrayLike) -> Array:
    """`log(det(x))` for symmetric positive-definite `x`.

    Args:
        x: A symmetric positive-definite matrix `(..., n, n)`.

    Returns:
        `(...)` log-determinants.
    """
    return jnp.linalg.slogdet(x)[1]


def _float(x):
    x = as_array(x)
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype("float32")


def _num_segments(segment_ids, num_segments):
    """`num_segments`, or (eagerly) one more than the largest id. Read here,
    outside the op, so a tape replays the op with the same static size."""
    if num_segments is not None:
        return num_segments
    segment_ids = unwrap(segment_ids)
    if isinstance(segment_ids, jax.core.Tracer):
        raise ValueError("segment ops: inside jax.jit `num_segments` must be given "
                         "(the output size has to be static).")
    return int(jnp.max(segment_ids)) + 1


def segment_sum(data: ArrayLike, segment_ids: ArrayLike, num_segments: int | None = None,
                sorted: bool = False) -> Array:
    """Sums of `data` rows sharing a segment id: out[i] = sum(data[ids == i]).

    Args:
        data: Array `(N, ...)`.
        segment_ids: Integer ids `(N,)`.
        num_segments: The number of segments (default `max(segment_ids) + 1`, read eagerly).
        sorted: Whether `segment_ids` is sorted (a speed hint).

    Returns:
        `(num_segments, ...)` sums.
    """
    return _segment_sum(data, segment_ids, _num_segments(segment_ids, num_segments), sorted)


def segment_max(data: ArrayLike, segment_ids: ArrayLike, num_segments: int | None = None,
                sorted: bool = False) -> Array:
    """Maxima of `data` rows sharing a segment id.

    Args:
        data: Array `(N, ...)`.
        segment_ids: Integer ids `(N,)`.
        num_segments: The number of segments (default `max(segment_ids) + 1`, read eagerly).
        sorted: Whether `segment_ids` is sorted (a speed hint).

    Returns:
        `(num_segments, ...)` maxima.
    """
    return _segment_max(data, segment_ids, _num_segments(segment_ids, num_segments), sorted)


@op
@compiled("num_segments", "sorted")
def _segment_sum(data, segment_ids, num_segments, sorted):
    return jax.ops.segment_sum(data, segment_ids, num_segments, indices_are_sorted=sorted)


@op
@compiled("num_segments", "sorted")
def _segment_max(data, segment_ids, num_segments, sorted):
    return jax.ops.segment_max(data, segment_ids, num_segments, indices_are_sorted=sorted)


__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_"))
