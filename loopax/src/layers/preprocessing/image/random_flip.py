"""`RandomFlip`: flips images horizontally and/or vertically at random, in
training only."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src import random
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import standardize_data_format
from loopax.src.layers.layer import Layer
from loopax.src.tensor import unwrap


@export("loopax.layers.RandomFlip")
class RandomFlip(Layer):
    """In training, flips each image left-right and/or up-down with
    probability 1/2 (`mode`: "horizontal", "vertical" or
    "horizontal_and_vertical", where one draw flips both); the identity
    otherwise.

    Input: images `(batch, height, width, channels)` or one image
    `(height, width, channels)`; output of the same shape, in the layer's dtype.

    Args:
        mode: `"horizontal"`, `"vertical"` or `"horizontal_and_vertical"` (the
            default).
        seed: An int, or None for a random seed.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: an unknown `mode`, or (when called in training) images not of rank
            3 or 4.
    """

    _MODES = ("horizontal", "vertical", "horizontal_and_vertical")

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        if mode not in self._MODES:
            raise ValueError(f"RandomFlip: `mode` must be one of {self._MODES}, got {mode!r}.")
        self.mode, self.seed = mode, seed
        self.data_format = standardize_data_format(data_format)
        self.seed_generator = random.SeedGenerator(seed)
        self.built = True

    def call(self, inputs, training=True):
        x = jnp.asarray(unwrap(inputs)).astype(self.dtype)
        if not training:
            return x
        if x.ndim not in (3, 4):
            raise ValueError(f"RandomFlip {self.name!r}: expects images of rank 3 or 4; got "
                             f"shape {tuple(x.shape)}.")
        batched = x if x.ndim == 4 else x[None]
        flips = jax.random.bernoulli(self.seed_generator.next(), 0.5,
                                     (batched.shape[0], 1, 1, 1))
        w_axis, h_axis = (2, 1) if self.data_format == "channels_last" else (3, 2)
        if self.mode != "vertical":
            batched = jnp.where(flips, jnp.flip(batched, w_axis), batched)
        if self.mode != "horizontal":
            batched = jnp.where(flips, jnp.flip(batched, h_axis), batched)
        return batched if x.ndim == 4 else batched[0]

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "seed": self.seed,
                "data_format": self.data_format}
