"""Keras 3's colour and filter augmentation layers: RandomColorDegeneration,
RandomSaturation, RandomHue, RandomColorJitter, RandomSharpness and
RandomGaussianBlur (built on `image_augmentation`'s base: batches, one image
or `{"images", "labels"}` dicts; Keras's transformation keys; active with
`training=True` only).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.preprocessing.image.augmentation import (
    RandomBrightness,
    RandomContrast,
    _factor_pair,
    _value_range,
)
from loopax.src.layers.preprocessing.image.image_augmentation import (
    _GRAYSCALE_WEIGHTS,
    _ImageAugmentation,
)

_KERAS_EPSILON = 1e-7  # keras.config.epsilon()


def _split_channels(images, axis):
    return [jnp.take(images, i, axis=axis) for i in range(3)]


def rgb_to_hsv(images, axis=-1):
    """RGB -> HSV (hue in [0, 1)), channel `axis`; as Keras's JAX backend
    (dm_pix's formulas), also for values outside [0, 1]."""
    eps = jnp.finfo(images.dtype).eps
    images = jnp.where(jnp.abs(images) < eps, 0.0, images)
    red, green, blue = _split_channels(images, axis)
    value = jnp.maximum(jnp.maximum(red, green), blue)
    spread = value - jnp.minimum(jnp.minimum(red, green), blue)
    saturation = jnp.where(value > 0, spread / jnp.where(value > 0, value, 1.0), 0.0)
    norm = 1.0 / (6.0 * jnp.where(spread > 0, spread, 1.0))
    hue = jnp.where(value == green, norm * (blue - red) + 2.0 / 6.0,
                    norm * (red - green) + 4.0 / 6.0)
    hue = jnp.where(value == red, norm * (green - blue), hue)
    hue = jnp.where(spread > 0, hue, 0.0) + (hue < 0.0).astype(hue.dtype)
    return jnp.stack([hue, saturation, value], axis=axis)


def hsv_to_rgb(images, axis=-1):
    """HSV -> RGB, the inverse of `rgb_to_hsv`."""
    hue, saturation, value = _split_channels(images, axis)
    sector = jnp.mod(hue, 1.0) * 6.0
    weights = (jnp.clip(jnp.abs(sector - 3.0) - 1.0, 0.0, 1.0),
               jnp.clip(2.0 - jnp.abs(sector - 2.0), 0.0, 1.0),
               jnp.clip(2.0 - jnp.abs(sector - 4.0), 0.0, 1.0))
    return jnp.stack([value * (1.0 - saturation + saturation * w) for w in weights], axis=axis)


def _depthwise_same(images, kernel, data_format):
    """Each channel of a `(batch, ...)` image batch convolved with the 2-D
    `kernel`, zero padded to keep the size."""
    channels_last = data_format == "channels_last"
    x = jnp.moveaxis(images, -1, 1) if channels_last else images
    channels = x.shape[1]
    weights = jnp.tile(kernel[None, None].astype(x.dtype), (channels, 1, 1, 1))
    out = jax.lax.conv_general_dilated(x, weights, (1, 1), "SAME",
                                       dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                       feature_group_count=channels)
    return jnp.moveaxis(out, 1, -1) if channels_last else out


class _ColorLayer(_ImageAugmentation):
    """Base: a per-image factor drawn uniformly from `self.factor`."""

    def _draw_factor(self, images, shape_tail=()):
        batch = images.shape[0] if images.ndim == 4 else 1
        return jax.random.uniform(self.seed_generator.next(), (batch,) + shape_tail,
                                  minval=self.factor[0], maxval=self.factor[1])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}


@export("loopax.layers.RandomColorDegeneration")
class RandomColorDegeneration(_ColorLayer):
    """Blends each RGB image toward its grayscale version:
    `x + f · (gray(x) - x)`, `f` drawn per image from `factor`, clipped to
    `value_range` (f = 1: grayscale; f = -1: colours pushed further apart).

    Input: RGB images `(batch, height, width, 3)` or one image; output of the same
    shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        factor: A number `f` (`[-f, f]`) or a pair, in [-1, 1].
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of range, `value_range` not a pair, or (when called)
            images without 3 channels.
    """

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (-1, 1), "RandomColorDegeneration")
        self.value_range = sorted(_value_range(value_range, "RandomColorDegeneration"))

    def get_random_transformation(self, images, training=True):
        return {"factor": self._draw_factor(images, (1, 1, 1))} if training else None

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        axis = self._channel_axis()
        if images.shape[axis] != 3:
            raise ValueError(f"RandomColorDegeneration {self.name!r}: expects RGB images (3 "
                             f"channels); got shape {tuple(images.shape)} ({self.data_format}).")
        gray = jnp.expand_dims(jnp.tensordot(images, jnp.asarray(_GRAYSCALE_WEIGHTS, images.dtype),
                                             axes=((images.ndim + axis) % images.ndim, 0)), axis)
        factor = jnp.asarray(transformation["factor"], images.dtype)
        return jnp.clip(images + factor * (gray - images), *self.value_range)


@export("loopax.layers.RandomSaturation")
class RandomSaturation(_ColorLayer):
    """Scales each image's HSV saturation by `f / (1 - f)`, `f` drawn per
    image from `factor` (0.5: unchanged, 0: grayscale, near 1: saturated).

    As Keras 3.15, the HSV conversion takes the pixel values as they are (no
    rescaling by `value_range`) and the scaled saturation is clipped to
    `value_range`.

    Input: RGB images `(batch, height, width, 3)` or one image; output of the same
    shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        factor: A number `f` (`[-f, f]`) or a pair, in [-1, 1]; use values in [0, 1].
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of range or `value_range` not a pair.
    """

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (-1, 1), "RandomSaturation")
        self.value_range = sorted(_value_range(value_range, "RandomSaturation"))

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        factor = self._draw_factor(images)
        return {"factor": factor / (1 - factor + _KERAS_EPSILON)}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        axis = self._channel_axis()
        hue, saturation, value = _split_channels(rgb_to_hsv(images, axis), axis)
        factor = jnp.reshape(jnp.asarray(transformation["factor"], images.dtype), (-1, 1, 1))
        saturation = jnp.clip(saturation * factor, *self.value_range)
        return hsv_to_rgb(jnp.stack([hue, saturation, value], axis=axis), axis)


@export("loopax.layers.RandomHue")
class RandomHue(_ColorLayer):
    """Rotates each image's hue by `±f / 2` of a full turn, `f` drawn per
    image from `factor` and the sign at random; clipped to `value_range`.

    Input: RGB images `(batch, height, width, 3)` or one image; output of the same
    shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        factor: A number `f` (`[0, f]`) or a pair, in [0, 1].
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of [0, 1] or `value_range` not a pair.
    """

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "RandomHue")
        self.value_range = _value_range(value_range, "RandomHue")

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch = images.shape[0] if images.ndim == 4 else 1
        sign_key, factor_key = jax.random.split(self.seed_generator.next())
        sign = jnp.where(jax.random.uniform(sign_key, (batch,)) > 0.5, -1.0, 1.0)
        factor = jax.random.uniform(factor_key, (batch,), minval=self.factor[0],
                                    maxval=self.factor[1])
        return {"factor": sign * factor * 0.5}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        low, high = self.value_range
        axis = self._channel_axis()
        unit = (images - low) / (high - low)
        hue, saturation, value = _split_channels(rgb_to_hsv(unit, axis), axis)
        hue = hue + jnp.reshape(jnp.asarray(transformation["factor"], images.dtype), (-1, 1, 1))
        hue = jnp.where(hue > 1.0, hue - 1.0, hue)
        hue = jnp.where(hue < 0.0, hue + 1.0, hue)
        rgb = jnp.clip(hsv_to_rgb(jnp.stack([hue, saturation, value], axis=axis), axis), 0, 1)
        return rgb * (high - low) + low


@export("loopax.layers.RandomColorJitter")
class RandomColorJitter(_ImageAugmentation):
    """Random brightness, contrast, saturation and hue changes, in that
    order, each by the layer of that name (RandomBrightness, RandomContrast,
    RandomSaturation, RandomHue) when its factor is given.

    Input: RGB images `(batch, height, width, 3)` or one image; output of the same
    shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        brightness_factor: RandomBrightness's `factor`, or None to skip it.
        contrast_factor: RandomContrast's `factor`, or None to skip it.
        saturation_factor: RandomSaturation's `factor`, or None to skip it.
        hue_factor: RandomHue's `factor`, or None to skip it.
        seed: An int, or None for a random seed (each step gets its own seed,
            `seed + i`, so that their draws are independent).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a factor out of its layer's range or `value_range` not a pair.
    """

    _SEEDED = False  # each step has its own generator

    def __init__(self, value_range=(0, 255), brightness_factor=None, contrast_factor=None,
                 saturation_factor=None, hue_factor=None, seed=None, data_format=None,
                 **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.seed = seed
        self.value_range = _value_range(value_range, "RandomColorJitter")
        self.brightness_factor, self.contrast_factor = brightness_factor, contrast_factor
        self.saturation_factor, self.hue_factor = saturation_factor, hue_factor
        steps = [(RandomBrightness, brightness_factor), (RandomContrast, contrast_factor),
                 (RandomSaturation, saturation_factor), (RandomHue, hue_factor)]
        self.steps = [make(factor, value_range=value_range, data_format=self.data_format,
                           seed=None if seed is None else seed + i, dtype=self.dtype_policy)
                      for i, (make, factor) in enumerate(steps) if factor is not None]

    def get_random_transformation(self, images, training=True):
        return None

    def transform_images(self, images, transformation=None, training=True):
        images = self._images(images)
        if not training:
            return images
        for step in self.steps:
            images = step.transform_images(images, step.get_random_transformation(images))
        return images

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "brightness_factor": self.brightness_factor,
                "contrast_factor": self.contrast_factor,
                "saturation_factor": self.saturation_factor, "hue_factor": self.hue_factor,
                "seed": self.seed}


@export("loopax.layers.RandomSharpness")
class RandomSharpness(_ColorLayer):
    """Sharpens or blurs each image: `x + (1 - 2f) · (smooth(x) - x)`, `f`
    drawn per image from `factor`, `smooth` the 3×3 filter with 5/13 at the
    centre and 1/13 around it (zero padded); clipped to `value_range`
    (f = 0.5: unchanged, 0: smoothed, 1: sharpened).

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        factor: A number `f` (`[0, f]`) or a pair, in [0, 1].
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of [0, 1] or `value_range` not a pair.
    """

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "RandomSharpness")
        self.value_range = sorted(_value_range(value_range, "RandomSharpness"))

    def get_random_transformation(self, images, training=True):
        return {"factor": self._draw_factor(images)} if training else None

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        kernel = jnp.full((3, 3), 1.0 / 13.0).at[1, 1].set(5.0 / 13.0)
        smooth = _depthwise_same(images, kernel, self.data_format)
        factor = jnp.reshape(jnp.asarray(transformation["factor"], images.dtype) * 2,
                             (-1, 1, 1, 1))
        return jnp.clip(images + (1.0 - factor) * (smooth - images), *self.value_range)


def _odd_sizes(kernel_size):
    sizes = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else \
        (kernel_size, kernel_size)
    if len(sizes) != 2 or not all(isinstance(s, int) and s > 0 and s % 2 for s in sizes):
        raise ValueError(f"RandomGaussianBlur: `kernel_size` must be a positive odd int or a "
                         f"pair of them; got {kernel_size!r}.")
    return sizes


def _gaussian(size, sigma, dtype):
    offsets = jnp.arange(size, dtype=dtype) - (size - 1) / 2
    weights = jnp.exp(-0.5 * (offsets / sigma) ** 2)
    return weights / jnp.sum(weights)


@export("loopax.layers.RandomGaussianBlur")
class RandomGaussianBlur(_ColorLayer):
    """Blurs each image, with a probability drawn per image from `factor`,
    by a Gaussian filter of `kernel_size` whose standard deviations (x, y)
    are drawn once per batch from `sigma` (zero padded); clipped to
    `value_range`.

    As Keras, `kernel_size = (kx, ky)` and the drawn `(σx, σy)` size and shape
    the filter along the width and height respectively.

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        factor: A number `p` (probability drawn from `[0, p]`) or a pair, in [0, 1]
            (default 1.0).
        kernel_size: An odd int or a pair of odd ints (default 3).
        sigma: A number `s` (`[0, s]`) or a pair, in [0, 1] (default 1.0).
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor`/`sigma` out of [0, 1], an even `kernel_size`, or
            `value_range` not a pair.
    """

    def __init__(self, factor=1.0, kernel_size=3, sigma=1.0, value_range=(0, 255),
                 data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "RandomGaussianBlur")
        self.kernel_size = _odd_sizes(kernel_size)
        self.sigma = _factor_pair(sigma, (0, 1), "RandomGaussianBlur", "sigma")
        self.value_range = _value_range(value_range, "RandomGaussianBlur")

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch = images.shape[0] if images.ndim == 4 else 1
        keys = jax.random.split(self.seed_generator.next(), 3)
        probability = jax.random.uniform(keys[0], (batch,), minval=self.factor[0],
                                         maxval=self.factor[1])
        sigma = jax.random.uniform(keys[2], (2,), self.dtype, *self.sigma) + 1e-6
        return {"should_apply_blur": jax.random.uniform(keys[1], (batch,)) < probability,
                "blur_factor": sigma}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        sigma = jnp.asarray(transformation["blur_factor"], images.dtype)
        kernel = jnp.outer(_gaussian(self.kernel_size[1], sigma[1], images.dtype),
                           _gaussian(self.kernel_size[0], sigma[0], images.dtype))
        blurred = _depthwise_same(images, kernel, self.data_format)
        apply = jnp.reshape(transformation["should_apply_blur"], (-1, 1, 1, 1))
        return jnp.clip(jnp.where(apply, blurred, images), *self.value_range)

    def get_config(self):
        return {**super().get_config(), "kernel_size": self.kernel_size, "sigma": self.sigma}
