"""Random image augmentation layers: RandomRotation, RandomZoom,
RandomTranslation (affine warps through `loopax.ops.image.affine_transform`),
RandomContrast and RandomBrightness.

Images are `(batch, height, width, channels)` or one image `(height, width,
channels)` (or channels-first with `data_format="channels_first"`). With
`training=True` each image gets its own random transformation drawn from the
layer's `SeedGenerator` (so same seed -> same result, also inside `fit()`);
otherwise the layer is the identity (a cast to its dtype).

As in Keras, every layer splits its work in two:
`get_random_transformation(images, training)` draws the parameters (a dict
with Keras's keys) and `transform_images(images, transformation)` applies
them deterministically.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from loopax.src import random
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import standardize_data_format
from loopax.src.layers.layer import Layer
from loopax.src.ops.image import AFFINE_INTERPOLATIONS, affine_transform
from loopax.src.tensor import unwrap

_WARP_FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def _factor_pair(factor, bounds, owner, argument="factor"):
    """`(lower, upper)` from a number `f` (-> `(max(-|f|, low), |f|)`) or a pair,
    each end inside `bounds` (as Keras checks it)."""
    message = (f"{owner}: `{argument}` must be a number or a pair of numbers in "
               f"[{bounds[0]}, {bounds[1]}]; got {factor!r}.")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or not all(isinstance(f, (int, float)) for f in factor):
            raise ValueError(message)
        if factor[0] > bounds[1] or factor[1] < bounds[0]:
            raise ValueError(message)
        return tuple(sorted(factor))
    if isinstance(factor, (int, float)) and not isinstance(factor, bool):
        if not bounds[0] <= factor <= bounds[1]:
            raise ValueError(message)
        factor = abs(factor)
        return max(-factor, bounds[0]), factor
    raise ValueError(message)


class _RandomImageLayer(Layer):
    """Shared parts: the seed generator, layout and the train-only switch."""

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.data_format = standardize_data_format(data_format)
        self.seed_generator = random.SeedGenerator(seed)
        self.built = True

    def _images(self, inputs):
        x = jnp.asarray(unwrap(inputs)).astype(self.dtype)
        if x.ndim not in (3, 4):
            raise ValueError(f"{type(self).__name__} {self.name!r}: expects images of rank 3 "
                             f"(h, w, c) or 4 (batch, h, w, c); got shape {tuple(x.shape)}.")
        return x

    def _batch_and_size(self, x):
        """(batch size, height, width) of rank-3 or rank-4 images."""
        batch = x.shape[0] if x.ndim == 4 else 1
        spatial = x.shape[-3:-1] if self.data_format == "channels_last" else x.shape[-2:]
        return batch, spatial[0], spatial[1]

    def call(self, inputs, training=True):
        x = self._images(inputs)
        if not training:
            return x
        return self.transform_images(x, self.get_random_transformation(x, training=True))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "seed": self.seed, "data_format": self.data_format}


class _RandomWarp(_RandomImageLayer):
    """Base of the layers that warp by an affine transform."""

    def __init__(self, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        owner = type(self).__name__
        if fill_mode not in _WARP_FILL_MODES:
            raise ValueError(f"{owner}: `fill_mode` must be one of {_WARP_FILL_MODES}, "
                             f"got {fill_mode!r}.")
        if interpolation not in AFFINE_INTERPOLATIONS:
            raise ValueError(f"{owner}: `interpolation` must be one of "
                             f"{tuple(AFFINE_INTERPOLATIONS)}, got {interpolation!r}.")
        self.fill_mode, self.interpolation, self.fill_value = fill_mode, interpolation, \
            fill_value

    def _warp(self, images, matrix):
        """Applies `(batch, 8)` transforms (one image: the first row)."""
        if images.ndim == 3:
            matrix = matrix[0]
        return affine_transform(images, matrix, interpolation=self.interpolation,
                                fill_mode=self.fill_mode, fill_value=self.fill_value,
                                data_format=self.data_format)

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "interpolation": self.interpolation}


def rotation_matrix(angle_degrees, height, width):
    """`(batch, 8)` transforms rotating images by `angle_degrees` (batch,)
    about their centre."""
    angle = angle_degrees * (math.pi / 180.0)
    cx, cy = 0.5 * (width - 1), 0.5 * (height - 1)
    cos, sin = jnp.cos(angle), jnp.sin(angle)
    zeros = jnp.zeros_like(angle)
    return jnp.stack([cos, -sin, cx - cx * cos + cy * sin,
                      sin, cos, cy - cx * sin - cy * cos, zeros, zeros], axis=1)


@export("loopax.layers.RandomRotation")
class RandomRotation(_RandomWarp):
    """Rotates each image by a random angle in `factor · 360°` (a number `f`:
    `[-f, f]`; a pair: `[lower, upper]`, fractions of a full turn,
    counter-clockwise for positive values).

    Input: images `(batch, height, width, channels)` or one image
    `(height, width, channels)` (channels first with `"channels_first"`), any numeric
    dtype; output of the same shape, in the layer's dtype. Acts only with
    `training=True`.

    Args:
        factor: A number `f` in [0, 1] (angles in `[-f, f] · 360°`) or a pair
            `(lower, upper)` in [-1, 1].
        fill_mode: How points outside the image are filled: `"reflect"` (the
            default), `"wrap"`, `"constant"` or `"nearest"`.
        interpolation: `"bilinear"` (the default) or `"nearest"`.
        seed: An int, or None for a random seed.
        fill_value: The value for `fill_mode="constant"` (default 0.0).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a factor out of range, an unknown `fill_mode`/`interpolation`, or
            (when called) images not of rank 3 or 4.
    """

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = _factor_pair(factor, (-1, 1), "RandomRotation")

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch, height, width = self._batch_and_size(images)
        angle = jax.random.uniform(self.seed_generator.next(), (batch,),
                                   minval=self.factor[0] * 360.0, maxval=self.factor[1] * 360.0)
        return {"angle": angle, "rotation_matrix": rotation_matrix(angle, height, width)}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        matrix = jnp.atleast_2d(transformation["rotation_matrix"])
        return self._warp(images, matrix)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@export("loopax.layers.RandomZoom")
class RandomZoom(_RandomWarp):
    """Zooms each image by a random factor: `height_factor` `f` draws the
    vertical scale of the sampled box in `[1 + lower, 1 + upper]` (negative
    values zoom in, positive zoom out); `width_factor` likewise, or None to
    keep the aspect ratio.

    Input: images `(batch, height, width, channels)` or one image
    `(height, width, channels)` (channels first with `"channels_first"`), any numeric
    dtype; output of the same shape, in the layer's dtype. Acts only with
    `training=True`.

    Args:
        height_factor: A number `f` (`[-f, f]`) or a pair `(lower, upper)`, in (-1, 1].
        width_factor: Likewise for the horizontal scale, or None (the default) to use
            the vertical scale.
        fill_mode: How points outside the image are filled: `"reflect"` (the
            default), `"wrap"`, `"constant"` or `"nearest"`.
        interpolation: `"bilinear"` (the default) or `"nearest"`.
        seed: An int, or None for a random seed.
        fill_value: The value for `fill_mode="constant"` (default 0.0).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a factor out of range, an unknown `fill_mode`/`interpolation`, or
            (when called) images not of rank 3 or 4.
    """

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_range = self._range(height_factor, "height_factor")
        self.width_range = None if width_factor is None else \
            self._range(width_factor, "width_factor")

    @staticmethod
    def _range(factor, argument):
        pair = factor if isinstance(factor, (tuple, list)) else (-abs(factor), abs(factor)) \
            if isinstance(factor, (int, float)) else None
        if pair is None or len(pair) != 2 or not all(-1.0 < f <= 1.0 for f in pair):
            raise ValueError(f"RandomZoom: `{argument}` must be a number or a pair of "
                             f"numbers in (-1, 1]; got {factor!r}.")
        return tuple(sorted(pair))

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch, _, _ = self._batch_and_size(images)
        height_key, width_key = jax.random.split(self.seed_generator.next())
        low, high = self.height_range
        height_zoom = jax.random.uniform(height_key, (batch, 1), minval=1 + low,
                                         maxval=1 + high)
        if self.width_range is None:
            width_zoom = height_zoom
        else:
            low, high = self.width_range
            width_zoom = jax.random.uniform(width_key, (batch, 1), minval=1 + low,
                                            maxval=1 + high)
        return {"height_zoom": height_zoom, "width_zoom": width_zoom}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        _, height, width = self._batch_and_size(images)
        zx = jnp.reshape(transformation["width_zoom"], (-1,)).astype(images.dtype)
        zy = jnp.reshape(transformation["height_zoom"], (-1,)).astype(images.dtype)
        zeros = jnp.zeros_like(zx)
        matrix = jnp.stack([zx, zeros, (width - 1) / 2 * (1 - zx),
                            zeros, zy, (height - 1) / 2 * (1 - zy), zeros, zeros], axis=1)
        return self._warp(images, matrix)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


@export("loopax.layers.RandomTranslation")
class RandomTranslation(_RandomWarp):
    """Shifts each image by a random fraction of its size: `height_factor`
    and `width_factor` as a number `f` (`[-f, f]`) or a pair, in [-1, 1]
    (positive moves the content down / right).

    Input: images `(batch, height, width, channels)` or one image
    `(height, width, channels)` (channels first with `"channels_first"`), any numeric
    dtype; output of the same shape, in the layer's dtype. Acts only with
    `training=True`.

    Args:
        height_factor: A number `f` (`[-f, f]`) or a pair `(lower, upper)`, in [-1, 1]:
            the vertical shift as a fraction of the height.
        width_factor: Likewise for the horizontal shift, as a fraction of the width.
        fill_mode: How points outside the image are filled: `"reflect"` (the
            default), `"wrap"`, `"constant"` or `"nearest"`.
        interpolation: `"bilinear"` (the default) or `"nearest"`.
        seed: An int, or None for a random seed.
        fill_value: The value for `fill_mode="constant"` (default 0.0).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a factor out of range, an unknown `fill_mode`/`interpolation`, or
            (when called) images not of rank 3 or 4.
    """

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_range = self._range(height_factor, "height_factor")
        self.width_range = self._range(width_factor, "width_factor")

    @staticmethod
    def _range(factor, argument):
        pair = factor if isinstance(factor, (tuple, list)) else (-abs(factor), abs(factor)) \
            if isinstance(factor, (int, float)) else None
        if pair is None or len(pair) != 2 or not all(-1.0 <= f <= 1.0 for f in pair):
            raise ValueError(f"RandomTranslation: `{argument}` must be a number or a pair of "
                             f"numbers in [-1, 1]; got {factor!r}.")
        return tuple(sorted(pair))

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch, height, width = self._batch_and_size(images)
        height_key, width_key = jax.random.split(self.seed_generator.next())
        dy = jax.random.uniform(height_key, (batch, 1), minval=self.height_range[0],
                                maxval=self.height_range[1]) * height
        dx = jax.random.uniform(width_key, (batch, 1), minval=self.width_range[0],
                                maxval=self.width_range[1]) * width
        return {"translations": jnp.concatenate([dx, dy], axis=1)}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        shift = jnp.asarray(transformation["translations"]).astype(images.dtype)
        ones, zeros = jnp.ones_like(shift[:, 0]), jnp.zeros_like(shift[:, 0])
        matrix = jnp.stack([ones, zeros, -shift[:, 0], zeros, ones, -shift[:, 1], zeros,
                            zeros], axis=1)
        return self._warp(images, matrix)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


def _value_range(value_range, owner):
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
        raise ValueError(f"{owner}: `value_range` must be a pair (low, high); "
                         f"got {value_range!r}.")
    return value_range


@export("loopax.layers.RandomContrast")
class RandomContrast(_RandomImageLayer):
    """Scales each image's deviation from its per-channel mean by a random
    factor in `[1 - lower, 1 + upper]`, then clips to `value_range`.

    `factor` in [0, 1]: a number `f` gives `(lower, upper) = (0, f)`, i.e.
    factors in `[1, 1 + f]` (as Keras 3.15); pass `(f, f)` for `[1 - f, 1 + f]`.

    Input: images `(batch, height, width, channels)` or one image
    `(height, width, channels)` (channels first with `"channels_first"`), any numeric
    dtype; output of the same shape, in the layer's dtype. Acts only with
    `training=True`.

    Args:
        factor: A number or a pair `(lower, upper)`, in [0, 1], as above.
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        seed: An int, or None for a random seed.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of range, `value_range` not a pair, or (when called)
            images not of rank 3 or 4.
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "RandomContrast")
        self.value_range = _value_range(value_range, "RandomContrast")

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch, _, _ = self._batch_and_size(images)
        factor = jax.random.uniform(self.seed_generator.next(), (batch, 1, 1, 1),
                                    minval=1.0 - self.factor[0], maxval=1.0 + self.factor[1])
        return {"contrast_factor": factor.astype(self.dtype)}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        factor = jnp.asarray(transformation["contrast_factor"]).astype(images.dtype)
        if images.ndim == 3:
            factor = jnp.reshape(factor, (1, 1, 1))
        axes = (-3, -2) if self.data_format == "channels_last" else (-2, -1)
        mean = jnp.mean(images, axis=axes, keepdims=True)
        out = (images - mean) * factor + mean
        return jnp.clip(out, self.value_range[0], self.value_range[1])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}


@export("loopax.layers.RandomBrightness")
class RandomBrightness(_RandomImageLayer):
    """Adds a random `delta · (high - low)` to each image, `delta` in
    `factor` (a number `f`: `[-f, f]`; a pair, in [-1, 1]), then clips to
    `value_range = (low, high)`.

    Input: images `(batch, height, width, channels)` or one image
    `(height, width, channels)` (channels first with `"channels_first"`), any numeric
    dtype; output of the same shape, in the layer's dtype. Acts only with
    `training=True`.

    Args:
        factor: A number `f` or a pair `(lower, upper)`, in [-1, 1]: the shift as a
            fraction of the value range.
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        seed: An int, or None for a random seed.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of range, `value_range` not a pair, or (when called)
            images not of rank 3 or 4.
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (-1, 1), "RandomBrightness")
        self.value_range = sorted(_value_range(value_range, "RandomBrightness"))

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch, _, _ = self._batch_and_size(images)
        delta = jax.random.uniform(self.seed_generator.next(), (batch, 1, 1, 1),
                                   minval=self.factor[0], maxval=self.factor[1])
        return {"rgb_delta": delta * (self.value_range[1] - self.value_range[0])}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        delta = jnp.asarray(transformation["rgb_delta"]).astype(images.dtype)
        if images.ndim == 3:
            delta = jnp.reshape(delta, (1, 1, 1))
        return jnp.clip(images + delta, self.value_range[0], self.value_range[1])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}
