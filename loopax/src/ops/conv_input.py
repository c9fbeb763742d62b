"""A convolution's input written once on CPU (#37).

XLA:CPU fuses the elementwise ops that make a convolution's input into every
consumer of that input: the convolution's own input fusion, the next residual
`add`, and the kernel gradient's transposing copy. In a residual network the
input of block k is `relu(bn(conv) + input of block k-1)`, so each of those
fusions recomputes the whole chain of blocks before it (ResNet-20's first stage:
a four-block copy 272 ms, a one-block one 28-36 ms, in a profile at load 11).
`lax.optimization_barrier` does not stop it (XLA:CPU drops barriers before
fusing). XLA does not duplicate an expensive op such as a floating division, so
the convolution's input divided by a 1.0 XLA cannot fold is computed once, and
the convolution and its kernel gradient read it: the same bits (`x / 1.0 == x`),
a ResNet-20 gradient step 0.70x (docs/performance.md). The residual `add` still
reads the undivided input, so its fusions may still recompute the chain.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

_INT_OF_SIZE = {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}


def computed_once(x: jax.Array, kernel: jax.Array) -> jax.Array:
    """`x` unchanged, made by one fusion XLA:CPU does not copy into its consumers
    (see the module docstring); `x` as is off CPU or when not floating point.

    The divisor is 1 computed from `kernel`'s first element's bits (`b | 1` over
    itself, whatever the value, NaN included), which XLA cannot fold."""
    if (jax.default_backend() != "cpu" or not jnp.issubdtype(x.dtype, jnp.floating)
            or not jnp.issubdtype(kernel.dtype, jnp.floating) or kernel.size == 0
            or kernel.dtype.itemsize not in _INT_OF_SIZE):
        return x
    first = lax.stop_gradient(kernel).reshape(-1)[0]
    bits = lax.bitcast_convert_type(first, _INT_OF_SIZE[kernel.dtype.itemsize]) | 1
    one = lax.div(bits, bits).astype(x.dtype)
    return x / one
