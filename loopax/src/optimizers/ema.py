"""Exponential moving average of the weights (Keras's `use_ema`).

After every call (the micro-steps of gradient accumulation too), with `t`
the number of full updates before it and momentum `m`:

    avg <- m_t * avg + (1 - m_t) * w,     m_t = 0 while t == 0 (the average starts at w),
                                          m_t = m after

and, with `ema_overwrite_frequency=f`, the weights take their averages when
`(t + 1) % f == 0`: `w <- avg`.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array


def averaged(average: Array, weight: Array, momentum: float, first_update: Array) -> Array:
    """The new average of `weight` (momentum 0 on the first update)."""
    m = jnp.where(first_update, 0.0, momentum).astype(weight.dtype)
    return m * average + (1 - m) * weight


def overwrite_due(update_count: Array, frequency: int) -> Array:
    """Whether the weights take their averages after update `update_count` (0-based)."""
    return (update_count + 1) % frequency == 0


def overwritten(weight: Array, average: Array, overwrite: Array) -> Array:
    """`average` where `overwrite`, else `weight`."""
    return jnp.where(overwrite, average, weight)


def check_momentum(owner: str, momentum: float) -> None:
    """ValueError naming `owner` when `momentum` is outside [0, 1]."""
    if not 0 <= momentum <= 1:
        raise ValueError(f"{owner}: `ema_momentum` must be in [0, 1], got {momentum!r}.")
