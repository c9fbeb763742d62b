"""`SpectralNormalization` (Miyato et al., 2018): a wrapper that divides the
wrapped layer's kernel by its largest singular value, estimated by power
iteration, as Keras does.

With `W` the kernel reshaped to `(-1, out)` and `u` `(1, out)` a
non-trainable variable, each training call runs `power_iterations` times

    v = l2_normalize(u W^T);   u = l2_normalize(v W)

then `sigma = v W u^T` (u, v without gradient), assigns `kernel / sigma`
to the kernel and the new `u` to `vector_u`, and calls the layer. An
all-zero kernel is left as is. At inference the layer runs on its kernel
unchanged.

As in Keras, the kernel assignment persists after an eager call; under
`stateless_call` (and so in `fit`) only non-trainable values come back, so
there the normalized kernel is used for the forward pass (and its
gradient) while the stored kernel and its optimizer see the raw one.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from loopax.src import initializers
from loopax.src.api_export import export
from loopax.src.layers.core.wrapper import Wrapper
from loopax.src.layers.layer import Layer
from loopax.src.module import track_created
from loopax.src.tensor import unwrap


def _l2_normalize(x, epsilon=1e-7):
    """`x / ||x||` over all elements, with Keras's floor on the norm (epsilon)."""
    return x * jnp.minimum(lax.rsqrt(jnp.sum(jnp.square(x))), 1.0 / epsilon)


@export("loopax.layers.SpectralNormalization")
class SpectralNormalization(Wrapper):
    """Spectral normalization of a layer's `kernel` (or `embeddings`), which
    bounds the layer's Lipschitz constant (e.g. a GAN discriminator's).

    Args:
        layer: the layer to wrap; it must have a `kernel` or `embeddings`
            weight (Dense, Conv*, Embedding, ...).
        power_iterations: power-iteration steps per training call (> 0).
        **kwargs: the base Layer arguments.

    Call arguments: `inputs` (the wrapped layer's inputs), `training`: only
    a training call normalizes (and updates `vector_u`).

    Returns (call): the wrapped layer's output, in the inputs' dtype.

    Raises:
        ValueError: `power_iterations` is not a positive int, `layer` is not
            a Layer, or (at build) it has no `kernel` nor `embeddings`.
    """

    def __init__(self, layer: Layer, power_iterations: int = 1, **kwargs):
        super().__init__(layer, **kwargs)
        if (not isinstance(power_iterations, int) or isinstance(power_iterations, bool)
                or power_iterations <= 0):
            raise ValueError("SpectralNormalization: `power_iterations` must be an int > 0, "
                             f"got {power_iterations!r}.")
        self.power_iterations = power_iterations

    def _kernel(self):
        for name in ("kernel", "embeddings"):
            variable = getattr(self.layer, name, None)
            if variable is not None:
                return variable
        raise ValueError(
            f"SpectralNormalization {self.name!r}: the wrapped {type(self.layer).__name__} "
            f"{self.layer.name!r} has no `kernel` nor `embeddings` weight to normalize; "
            "wrap a layer such as Dense, Conv2D or Embedding.")

    def build(self, input_shape):
        super().build(input_shape)
        # Also held here, as Keras does, and recorded among this layer's own
        # Variables before `vector_u` (module.owned lists those first): the
        # weights are then Keras's order (kernel, vector_u, then the wrapped
        # layer's others).
        self.kernel = kernel = track_created(self, self._kernel())
        self.vector_u = self.add_weight(
            (1, kernel.shape[-1]), initializers.TruncatedNormal(stddev=0.02),
            dtype=kernel.dtype, trainable=False, name="vector_u")
        self.built = True

    def normalized_weights(self):
        """`(new vector_u, kernel / sigma)` from `power_iterations` steps of
        power iteration (see the module doc); arrays, not assigned."""
        kernel = self._kernel().value
        weights = kernel.reshape(-1, kernel.shape[-1])
        u = self.vector_u.value
        for _ in range(self.power_iterations):
            v = _l2_normalize(u @ weights.T)
            u = _l2_normalize(v @ weights)
        u, v = lax.stop_gradient(u), lax.stop_gradient(v)
        sigma = (v @ weights) @ u.T
        return u.astype(self.vector_u.dtype), (kernel / sigma).astype(kernel.dtype)

    def call(self, inputs, training=False):
        if training:
            kernel = self._kernel()
            new_u, new_kernel = lax.cond(
                jnp.all(kernel.value == 0),
                lambda: (self.vector_u.value, kernel.value), self.normalized_weights)
            self.vector_u.assign(new_u)
            kernel.assign(new_kernel)
        outputs = self.layer(inputs)
        return outputs.astype(unwrap(inputs).dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "power_iterations": self.power_iterations}
