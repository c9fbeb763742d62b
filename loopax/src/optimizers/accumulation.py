"""Gradient accumulation (Keras's `gradient_accumulation_steps=N`).

N calls make one update. On call k (1-based), with the accumulators `acc`:

    k % N != 0:  acc <- acc + g                     (no update: weights and slots stay)
    k % N == 0:  update with (acc + g) / N,  acc <- 0

Clipping and weight decay act on that mean gradient, inside the update.
"""

from __future__ import annotations

from typing import Any, Sequence

from loopax.src.array_types import Array


def is_update_call(calls_before: Array, steps: int) -> Array:
    """Whether the call after `calls_before` earlier calls completes N gradients."""
    return (calls_before + 1) % steps == 0


def mean_gradients(grads: Sequence[Array], accumulated: Sequence[Array],
                   steps: int) -> list[Array]:
    """`(g + acc) / N` per variable: the gradient the update uses."""
    return [(g + a) / steps for g, a in zip(grads, accumulated)]


def accumulated(grads: Sequence[Array], accumulated: Sequence[Array]) -> list[Array]:
    """`acc + g` per variable."""
    return [a + g for g, a in zip(grads, accumulated)]


def check_steps(owner: str, steps: Any) -> None:
    """ValueError naming `owner` unless `steps` is None or an int >= 2."""
    if steps is not None and (not isinstance(steps, int) or steps < 2):
        raise ValueError(
            f"{owner}: `gradient_accumulation_steps` must be an int >= 2, got {steps!r}.")
