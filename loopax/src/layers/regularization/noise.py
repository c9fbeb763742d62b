"""Regularization noise layers: SpatialDropout1D/2D/3D, GaussianNoise,
GaussianDropout, AlphaDropout.

Active only when called with `training=True` (the identity otherwise);
each draws from its own `SeedGenerator` (`seed=` an int or None), so a
stateless call or `fit()` carries the RNG state like any other
non-trainable variable. Output shape = input shape.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from loopax.src import random
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import standardize_data_format
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.regularization.dropout import Dropout
from loopax.src.tensor import unwrap


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one keep/drop draw per (sample, channel)."""

    rank = None

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(rate, seed=seed, **kwargs)
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _noise_shape(self, shape):
        if self.data_format == "channels_first":
            return (shape[0], shape[1]) + (1,) * self.rank
        return (shape[0],) + (1,) * self.rank + (shape[-1],)

    def get_config(self):
        # Keras's SpatialDropout takes (and saves) no `trainable`.
        config = {**super().get_config(), "data_format": self.data_format}
        config.pop("noise_shape")
        config.pop("trainable")
        return config


@export("loopax.layers.SpatialDropout1D")
class SpatialDropout1D(_SpatialDropout):
    """Drops whole channels of `(batch, steps, channels)`.

    Input shape: `(batch, steps, channels)`; output shape = input shape.

    Args:
        rate: The drop probability, in [0, 1).
        seed: An int, or None (the default) for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `rate` is outside [0, 1).
    """

    rank = 1

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(rate, seed=seed, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("data_format")
        return config


@export("loopax.layers.SpatialDropout2D")
class SpatialDropout2D(_SpatialDropout):
    """Drops whole channels of `(batch, h, w, channels)`.

    Input shape: `(batch, h, w, channels)`, or `(batch, channels, h, w)` with
    `data_format="channels_first"`;
    output shape = input shape.

    Args:
        rate: The drop probability, in [0, 1).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None (the default) for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `rate` is outside [0, 1).
    """

    rank = 2


@export("loopax.layers.SpatialDropout3D")
class SpatialDropout3D(_SpatialDropout):
    """Drops whole channels of `(batch, d, h, w, channels)`.

    Input shape: `(batch, d, h, w, channels)`, or `(batch, channels, d, h, w)` with
    `data_format="channels_first"`;
    output shape = input shape.

    Args:
        rate: The drop probability, in [0, 1).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None (the default) for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `rate` is outside [0, 1).
    """

    rank = 3


def _rate(value, owner):
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1:
        return float(value)
    raise ValueError(f"{owner}: `rate` must be a number in [0, 1), got {value!r}.")


class _SeededNoise(Layer):
    """A layer with a SeedGenerator (made only when `active`)."""

    def __init__(self, seed, active, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        if active:
            self.seed_generator = random.SeedGenerator(seed)
        self.built = True


@export("loopax.layers.GaussianNoise")
class GaussianNoise(_SeededNoise):
    """Adds N(0, stddev²) noise in training.

    Args:
        stddev: The noise's standard deviation, >= 0.
        seed: An int, or None (the default) for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `stddev` is negative or not a number.
    """

    row_wise = True

    def __init__(self, stddev, seed=None, **kwargs):
        if not isinstance(stddev, (int, float)) or not stddev >= 0:
            raise ValueError(f"GaussianNoise: `stddev` must be a number >= 0, got {stddev!r}.")
        super().__init__(seed, stddev > 0, **kwargs)
        self.stddev = float(stddev)

    def call(self, inputs, training=False):
        x = unwrap(inputs)
        if not training or self.stddev == 0:
            return x
        noise = jax.random.normal(self.seed_generator.next(), x.shape, x.dtype)
        return x + self.stddev * noise

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


@export("loopax.layers.GaussianDropout")
class GaussianDropout(_SeededNoise):
    """Multiplies by N(1, rate / (1 - rate)) noise in training (the mean and
    variance of Dropout's scaled keep mask).

    Args:
        rate: The drop probability, in [0, 1).
        seed: An int, or None (the default) for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `rate` is outside [0, 1).
    """

    row_wise = True

    def __init__(self, rate, seed=None, **kwargs):
        rate = _rate(rate, "GaussianDropout")
        super().__init__(seed, rate > 0, **kwargs)
        self.rate = rate

    def call(self, inputs, training=False):
        x = unwrap(inputs)
        if not training or self.rate == 0:
            return x
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        return x * (1.0 + stddev * jax.random.normal(self.seed_generator.next(), x.shape,
                                                     x.dtype))

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


@export("loopax.layers.AlphaDropout")
class AlphaDropout(_SeededNoise):
    """Dropout for SELU networks: dropped entries are set to SELU's negative
    saturation value, then an affine map restores the input's mean and
    variance (Klambauer et al., 2017).

    Args:
        rate: drop probability in [0, 1).
        noise_shape: shape of the keep mask (None entries: the input's size).
    """

    row_wise = True

    _SELU_ALPHA = 1.6732632423543772848170429916717
    _SELU_SCALE = 1.0507009873554804934193349852946

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        rate = _rate(rate, "AlphaDropout")
        super().__init__(seed, rate > 0, **kwargs)
        self.rate = rate
        self.noise_shape = tuple(noise_shape) if noise_shape is not None else None

    def call(self, inputs, training=False):
        x = unwrap(inputs)
        if not training or self.rate == 0:
            return x
        shape = x.shape
        if self.noise_shape is not None:
            if len(self.noise_shape) != x.ndim:
                raise ValueError(f"AlphaDropout {self.name!r}: noise_shape {self.noise_shape} "
                                 f"must have the input's rank; input shape {tuple(x.shape)}.")
            shape = tuple(s if n is None else n for n, s in zip(self.noise_shape, x.shape))
        keep = jax.random.bernoulli(self.seed_generator.next(), 1.0 - self.rate, shape)
        saturation = -self._SELU_ALPHA * self._SELU_SCALE
        a = ((1 - self.rate) * (1 + self.rate * saturation ** 2)) ** -0.5
        b = -a * saturation * self.rate
        return a * jnp.where(keep, x, jnp.asarray(saturation, x.dtype)) + b

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed,
                "noise_shape": self.noise_shape}
