"""Keras 3's warping augmentation layers RandomShear and RandomPerspective
(projective warps through `loopax.ops.image.affine_transform`, on
`image_augmentation`'s base: batches, one image or `{"images", "labels"}`
dicts; Keras's transformation keys; active with `training=True` only).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.preprocessing.image.augmentation import _WARP_FILL_MODES, _factor_pair
from loopax.src.layers.preprocessing.image.image_augmentation import _ImageAugmentation
from loopax.src.ops.image import affine_transform

_WARP_INTERPOLATIONS = ("nearest", "bilinear")


def _check_interpolation(interpolation, owner):
    if interpolation not in _WARP_INTERPOLATIONS:
        raise ValueError(f"{owner}: `interpolation` must be one of {_WARP_INTERPOLATIONS}, "
                         f"got {interpolation!r}.")
    return interpolation


def homography(start_points, end_points):
    """`(batch, 8)` projective transforms taking each output point of
    `end_points` to the input point of `start_points` (both `(batch, 4, 2)`
    `(x, y)` corners), in `affine_transform`'s layout."""
    start_x, start_y = start_points[..., 0], start_points[..., 1]
    end_x, end_y = end_points[..., 0], end_points[..., 1]
    zeros, ones = jnp.zeros_like(end_x), jnp.ones_like(end_x)
    x_rows = jnp.stack([end_x, end_y, ones, zeros, zeros, zeros, -start_x * end_x,
                        -start_x * end_y], axis=-1)
    y_rows = jnp.stack([zeros, zeros, zeros, end_x, end_y, ones, -start_y * end_x,
                        -start_y * end_y], axis=-1)
    system = jnp.concatenate([x_rows, y_rows], axis=1)             # (batch, 8, 8)
    targets = jnp.concatenate([start_x, start_y], axis=-1)[..., None]
    return jnp.linalg.solve(system, targets)[..., 0]


@export("loopax.layers.RandomShear")
class RandomShear(_ImageAugmentation):
    """Shears each image: output pixel `(x, y)` reads the input at
    `(x + sx · y, sy · x + y)`, with `sx`, `sy` drawn per image from
    `x_factor`, `y_factor` and one random sign for both (as Keras, the shear
    is about the top-left corner).

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        x_factor: A number `f` in [0, 1] (`[-f, f]`) or a pair in [-1, 1] (default 0.0).
        y_factor: Likewise for the vertical shear (default 0.0).
        interpolation: `"bilinear"` (the default) or `"nearest"`.
        fill_mode: `"reflect"` (the default), `"wrap"`, `"constant"` or `"nearest"`.
        fill_value: The value for `fill_mode="constant"` (default 0.0).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a factor out of [0, 1], an unknown `fill_mode` or
            `interpolation`.
    """

    def __init__(self, x_factor=0.0, y_factor=0.0, interpolation="bilinear",
                 fill_mode="reflect", fill_value=0.0, data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.x_factor = self._shear_range(x_factor, "x_factor")
        self.y_factor = self._shear_range(y_factor, "y_factor")
        if fill_mode not in _WARP_FILL_MODES:
            raise ValueError(f"RandomShear: `fill_mode` must be one of {_WARP_FILL_MODES}, "
                             f"got {fill_mode!r}.")
        self.interpolation = _check_interpolation(interpolation, "RandomShear")
        self.fill_mode, self.fill_value = fill_mode, fill_value

    @staticmethod
    def _shear_range(factor, argument):
        """A number `f` in [0, 1] -> `(-f, f)`; a pair -> sorted. Keras wants the
        pair in [0, 1] too, but then cannot load its own saved `(-f, f)`: loopax
        takes pairs in [-1, 1]."""
        pair = isinstance(factor, (tuple, list))
        numbers = list(factor) if pair else [factor]
        low = -1 if pair else 0
        if (pair and len(numbers) != 2) or not all(
                isinstance(f, (int, float)) and not isinstance(f, bool) and low <= f <= 1
                for f in numbers):
            raise ValueError(f"RandomShear: `{argument}` must be a number in [0, 1] or a pair "
                             f"of numbers in [-1, 1]; got {factor!r}.")
        return tuple(sorted(numbers)) if pair else (-factor, factor)

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch = images.shape[0] if images.ndim == 4 else 1
        keys = jax.random.split(self.seed_generator.next(), 3)
        sign = jnp.where(jax.random.uniform(keys[0], (batch, 1)) > 0.5, -1.0, 1.0)
        shear_y = jax.random.uniform(keys[1], (batch, 1), minval=self.y_factor[0],
                                     maxval=self.y_factor[1])
        shear_x = jax.random.uniform(keys[2], (batch, 1), minval=self.x_factor[0],
                                     maxval=self.x_factor[1])
        return {"shear_factor": (jnp.concatenate([shear_x, shear_y], axis=1) * sign
                                 ).astype(self.dtype), "input_shape": images.shape}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        shear = jnp.asarray(transformation["shear_factor"], images.dtype)
        ones, zeros = jnp.ones_like(shear[:, 0]), jnp.zeros_like(shear[:, 0])
        matrix = jnp.stack([ones, shear[:, 0], zeros, shear[:, 1], ones, zeros, zeros, zeros],
                           axis=1)
        return affine_transform(images, matrix[0] if images.ndim == 3 else matrix,
                                interpolation=self.interpolation, fill_mode=self.fill_mode,
                                fill_value=self.fill_value, data_format=self.data_format)

    def get_config(self):
        return {**super().get_config(), "x_factor": self.x_factor, "y_factor": self.y_factor,
                "interpolation": self.interpolation, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value}


@export("loopax.layers.RandomPerspective")
class RandomPerspective(_ImageAugmentation):
    """Warps each image, with a probability drawn per image from `factor`,
    by the perspective transform that moves its four corners by random
    offsets of up to `scale / 2` times their coordinates; points read from
    outside the image get `fill_value`.

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        factor: A number `p` (probability drawn from `[0, p]`) or a pair, in [0, 1]
            (default 1.0).
        scale: The distortion strength, in [0, 1] (default 1.0).
        interpolation: `"bilinear"` (the default) or `"nearest"`.
        fill_value: The value for points outside the image (default 0.0).
        seed: An int, or None for a random seed.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` or `scale` out of [0, 1], or an unknown `interpolation`.
    """

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_value=0.0,
                 seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "RandomPerspective")
        if not isinstance(scale, (int, float)) or not 0.0 <= scale <= 1.0:
            raise ValueError(f"RandomPerspective: `scale` must be a number in [0, 1]; "
                             f"got {scale!r}.")
        self.scale, self.fill_value = scale, fill_value
        self.interpolation = _check_interpolation(interpolation, "RandomPerspective")

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch, height, width = self._batch_and_size(images)
        keys = jax.random.split(self.seed_generator.next(), 3)
        probability = jax.random.uniform(keys[0], (batch,), minval=self.factor[0],
                                         maxval=self.factor[1])
        offsets = jax.random.uniform(keys[2], (batch, 4, 2), self.dtype, -0.5 * self.scale,
                                     0.5 * self.scale)
        corners = jnp.asarray([[0.0, 0.0], [width - 1, 0.0], [0.0, height - 1],
                               [width - 1, height - 1]], self.dtype)
        start = jnp.broadcast_to(corners, (batch, 4, 2))
        return {"apply_perspective": jax.random.uniform(keys[1], (batch,)) < probability,
                "start_points": start, "end_points": start + start * offsets,
                "input_shape": images.shape}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        matrix = homography(jnp.asarray(transformation["start_points"], "float32"),
                            jnp.asarray(transformation["end_points"], "float32"))
        warped = affine_transform(images, matrix, interpolation=self.interpolation,
                                  fill_mode="constant", fill_value=self.fill_value,
                                  data_format=self.data_format)
        apply = jnp.reshape(transformation["apply_perspective"], (-1, 1, 1, 1))
        return jnp.where(apply, warped, images)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "scale": self.scale,
                "interpolation": self.interpolation, "fill_value": self.fill_value}
