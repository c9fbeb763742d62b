"""Dot: the batched dot product of two inputs (a merging layer)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.tensor import unwrap

_EPSILON = 1e-7  # Keras' backend.epsilon(): bounds the inverse norm in `normalize`


@export("loopax.layers.Dot")
class Dot(Layer):
    """Per sample, contracts axis `axes[0]` of `x1` with axis `axes[1]` of
    `x2`: `(b, *r1, k, *s1)` · `(b, *r2, k, *s2)` -> `(b, *r1, *s1, *r2, *s2)`
    (`(b, 1)` when nothing else remains), e.g. `(b, n, d)` and `(b, m, d)`
    with `axes=2` give `(b, n, m)`.

    Args:
        axes: an int (the same axis of both) or a pair; never the batch axis.
        normalize: L2-normalize both inputs along the contracted axis first,
            so the result is a cosine similarity.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `axes` is not an int or a pair of ints, or (when called) the inputs
            are not two, or their contracted sizes or batch sizes differ.
    """

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not (isinstance(axes, int) or (isinstance(axes, (list, tuple)) and len(axes) == 2
                                           and all(isinstance(a, int) for a in axes))):
            raise ValueError(f"Dot: `axes` must be an int or a pair of ints, got {axes!r}.")
        self.axes = axes if isinstance(axes, int) else tuple(axes)
        self.normalize = normalize
        self.built = True

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"Dot {self.name!r} must be called on a list of exactly 2 inputs.")
        x1, x2 = (unwrap(x) for x in inputs)
        pair = (self.axes, self.axes) if isinstance(self.axes, int) else self.axes
        axes = [a % x.ndim for a, x in zip(pair, (x1, x2))]
        if 0 in axes or x1.shape[axes[0]] != x2.shape[axes[1]] or x1.shape[0] != x2.shape[0]:
            raise ValueError(f"Dot {self.name!r}: cannot contract axis {axes[0]} of shape "
                             f"{tuple(x1.shape)} with axis {axes[1]} of shape {tuple(x2.shape)}"
                             " (same size needed, not the batch axis, same batch).")
        if self.normalize:
            x1, x2 = (x * jnp.minimum(jax.lax.rsqrt(jnp.sum(jnp.square(x), axis=a,
                                                            keepdims=True)), 1 / _EPSILON)
                      for x, a in zip((x1, x2), axes))
        out = jax.lax.dot_general(x1, x2, (((axes[0],), (axes[1],)), ((0,), (0,))))
        return out[:, None] if out.ndim == 1 else out

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


@export("loopax.layers.dot")
def dot(inputs, axes=-1, **kwargs):
    """Functional form of `Dot`: the per-sample dot product of two inputs.

    Args:
        inputs: A list of two tensors with the same batch size.
        axes: The contracted axis of both (an int, default -1) or a pair of them.
        **kwargs: Arguments of the `Dot` layer (`normalize`, `name`, ...).

    Returns:
        The contracted tensor (see `Dot` for its shape).
    """
    return Dot(axes=axes, **kwargs)(inputs)
