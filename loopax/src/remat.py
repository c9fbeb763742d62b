"""`loopax.remat`: rematerialization (gradient checkpointing) of a function, as
Keras's `keras.remat` on JAX: the function's intermediate values are recomputed in
the backward pass instead of kept, trading compute for memory. Values and gradients
are unchanged.
"""

import functools

import jax


def remat(f):
    """Wraps `f` so that its intermediates are recomputed for the gradient
    (`jax.checkpoint`).

    Args:
        f: A function of arrays (or a layer's method), e.g. the costly part of a
            layer's `call`.

    Returns:
        A function with `f`'s signature and results.
    """
    if not callable(f):
        raise TypeError(f"remat: expected a function or layer, got {type(f).__name__}.")
    return functools.wraps(f)(jax.checkpoint(f))
