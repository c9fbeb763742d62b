"""RandomElasticTransform: elastic distortion (Simard et al., 2003) of a random
share of the images, as Keras 3.15's layer, through `ops.image.elastic_transform`."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.preprocessing.image.augmentation import (
    _WARP_FILL_MODES,
    _factor_pair,
    _value_range,
)
from loopax.src.layers.preprocessing.image.geometric_augmentation import _check_interpolation
from loopax.src.layers.preprocessing.image.image_augmentation import _ImageAugmentation
from loopax.src.ops.image import _elastic_warp


def elastic_parameters(height, width, distortion_factor):
    """(alpha, sigma) of the distortion: `0.1 · factor · max(h, w)` and
    `0.05 · factor · min(h, w)`, as Keras."""
    return (max(height, width) * 0.1 * distortion_factor,
            min(height, width) * 0.05 * distortion_factor)


@export("loopax.layers.RandomElasticTransform")
class RandomElasticTransform(_ImageAugmentation):
    """Distorts each image, with a random probability drawn from `factor`, by
    an elastic displacement field of random strength drawn from `scale`.

    Per batch a distortion factor `s` is drawn from `scale`; the displacement is
    Gaussian noise blurred with `sigma = 0.05 · s · min(h, w)` and scaled by
    `alpha = 0.1 · s · max(h, w)`. Each image is distorted when a uniform draw
    falls below its probability (drawn from `factor`); the result is clipped to
    `value_range`. The transformation holds Keras's keys (`apply_transform`,
    `distortion_factor`, `seed`); the field itself comes from
    `ops.image.elastic_transform`'s generator (other numbers than Keras's).

    Input: images `(batch, height, width, channels)`, one image, or a dict with
    `"images"` (and `"labels"`); output alike, in the layer's dtype. Acts only
    with `training=True`.

    Args:
        factor: A number `f` (`[0, f]`) or a pair, in [0, 1]: the probability of
            distorting an image (default 1.0).
        scale: A number or a pair, in [0, 1]: the distortion strength (default 1.0).
        interpolation: `"bilinear"` (the default) or `"nearest"`.
        fill_mode: How points outside the image are read: `"reflect"` (the
            default), `"wrap"`, `"constant"` or `"nearest"`.
        fill_value: The value for `fill_mode="constant"` (default 0.0).
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        seed: An int, or None for a random seed.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor`/`scale` out of [0, 1], an unknown `interpolation` or
            `fill_mode`, or `value_range` not a pair.
    """

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_mode="reflect",
                 fill_value=0.0, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "RandomElasticTransform")
        self.scale = _factor_pair(scale, (0, 1), "RandomElasticTransform", "scale")
        self.interpolation = _check_interpolation(interpolation, "RandomElasticTransform")
        if fill_mode not in _WARP_FILL_MODES:
            raise ValueError(f"RandomElasticTransform: `fill_mode` must be one of "
                             f"{_WARP_FILL_MODES}, got {fill_mode!r}.")
        self.fill_mode, self.fill_value = fill_mode, fill_value
        self.value_range = _value_range(value_range, "RandomElasticTransform")

    def get_random_transformation(self, images, training=True):
        if not training or self.scale[1] == 0 or self.factor[1] == 0:
            return None
        batch = images.shape[0] if images.ndim == 4 else 1
        probability_key, threshold_key, scale_key, field_key = jax.random.split(
            self.seed_generator.next(), 4)
        probability = jax.random.uniform(probability_key, (batch,), minval=self.factor[0],
                                         maxval=self.factor[1])
        return {"apply_transform": jax.random.uniform(threshold_key, (batch,)) < probability,
                "distortion_factor": jax.random.uniform(scale_key, (), self.dtype,
                                                        self.scale[0], self.scale[1]),
                "seed": field_key}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        height, width = (images.shape[i] for i in self._spatial_axes())
        alpha, sigma = elastic_parameters(height, width,
                                          jnp.asarray(transformation["distortion_factor"]))
        # The blur's kernel is sized for the largest sigma the layer can draw (the
        # drawn one may be traced); the normalized Gaussian weights use the drawn sigma.
        kernel_size = int(6 * elastic_parameters(height, width, self.scale[1])[1]) | 1
        warped = _elastic_warp(images, alpha, sigma, kernel_size, self.interpolation,
                               self.fill_mode, self.fill_value, transformation["seed"],
                               self.data_format)
        apply = jnp.reshape(jnp.asarray(transformation["apply_transform"]),
                            (-1,) + (1,) * (images.ndim - 1))
        out = jnp.where(apply if images.ndim == 4 else apply[0], warped, images)
        return jnp.clip(out, *self.value_range)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "scale": self.scale,
                "interpolation": self.interpolation, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "value_range": self.value_range}
