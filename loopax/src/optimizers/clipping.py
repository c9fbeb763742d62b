"""Keras's gradient clipping (`clipnorm`, `global_clipnorm`, `clipvalue`) as
optax transformations; at most one of the three is set.

    clipnorm c:         g_i <- g_i * min(1, c / ||g_i||)          each gradient alone
    global_clipnorm c:  g_i <- g_i * min(1, c / sqrt(sum_j ||g_j||^2))
    clipvalue c:        g_i <- clip(g_i, -c, c)                    element by element
"""

from __future__ import annotations

import jax
import optax


def clip_each_by_norm(max_norm: float) -> optax.GradientTransformation:
    """Scales each gradient (leaf) on its own down to L2 norm `max_norm`."""
    clip_one = optax.clip_by_global_norm(max_norm)

    def update_fn(updates, state, params=None):
        del params
        return jax.tree.map(lambda g: clip_one.update(g, optax.EmptyState())[0], updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)


def keras_clipping(clipnorm: float | None = None, clipvalue: float | None = None,
                   global_clipnorm: float | None = None) -> optax.GradientTransformation:
    """The clipping an optimizer's arguments ask for (identity when none is set)."""
    if clipnorm:
        return clip_each_by_norm(clipnorm)
    if global_clipnorm:
        return optax.clip_by_global_norm(global_clipnorm)
    if clipvalue:
        return optax.clip(clipvalue)
    return optax.identity()


def check_one_clipping(owner: str, clipnorm: float | None, clipvalue: float | None,
                       global_clipnorm: float | None) -> None:
    """ValueError naming `owner` when more than one clipping argument is set."""
    if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
        raise ValueError(
            f"{owner}: set only one of `clipnorm`, `clipvalue` and "
            f"`global_clipnorm`; got clipnorm={clipnorm}, clipvalue={clipvalue}, "
            f"global_clipnorm={global_clipnorm}.")
