"""`Dropout`: zeroes inputs at `rate` and rescales the rest, in training only."""

from __future__ import annotations

from loopax.src import random
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.layers.symbolic import closed_form_output_shape, same_output_shape
from loopax.src.tensor import unwrap


@export("loopax.layers.Dropout")
@closed_form_output_shape
class Dropout(Layer):
    """In training, zeroes each entry with probability `rate` and scales the
    rest by 1 / (1 - rate); the identity otherwise.

    Args:
        rate: in [0, 1).
        noise_shape: shape of the keep mask, broadcast against the input
            (None entries take the input's size), e.g. `(batch, 1, features)`
            drops the same features at every timestep.
        seed: int or None; the layer's `seed_generator` holds the state.
    """

    row_wise = True

    supports_masking = True   # passes its input's mask on

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"Dropout: `rate` must be a number in [0, 1), got {rate!r}.")
        self.rate = float(rate)
        self.noise_shape = tuple(noise_shape) if noise_shape is not None else None
        self.seed = seed
        if self.rate > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self.built = True  # its only state, the seed, exists already

    def call(self, inputs, training=False):
        x = unwrap(inputs)
        if not training or self.rate == 0:
            return x
        return random.dropout(x, self.rate, self._noise_shape(x.shape),
                              seed=self.seed_generator)

    compute_output_shape = same_output_shape

    def _noise_shape(self, shape):
        if self.noise_shape is None:
            return None
        if len(self.noise_shape) != len(shape):
            raise ValueError(f"Dropout {self.name!r}: noise_shape {self.noise_shape} must have "
                             f"the input's rank; the input has shape {tuple(shape)}.")
        return tuple(s if n is None else n for n, s in zip(self.noise_shape, shape))

    def get_config(self):
        return {**super().get_config(), "rate": self.rate,
                "noise_shape": self.noise_shape, "seed": self.seed}
