"""RandAugment (Cubuk et al., 2020): `num_ops` augmentations picked at random
per batch from a fixed list of eleven, as Keras 3.15 builds it from its own
augmentation layers (loopax's layers of the same names here)."""

from __future__ import annotations

import jax

from loopax.src.api_export import export
from loopax.src.layers.preprocessing.image.augmentation import (
    RandomBrightness,
    RandomContrast,
    RandomRotation,
    RandomTranslation,
    _factor_pair,
    _value_range,
)
from loopax.src.layers.preprocessing.image.color_augmentation import (
    RandomColorDegeneration,
    RandomSharpness,
)
from loopax.src.layers.preprocessing.image.geometric_augmentation import (
    RandomShear,
    _check_interpolation,
)
from loopax.src.layers.preprocessing.image.image_augmentation import (
    AutoContrast,
    Equalization,
    RandomPosterization,
    Solarization,
    _ImageAugmentation,
)


def policy_layers(factor, value_range, interpolation, seed, data_format, dtype):
    """{name: layer}: the eleven augmentations RandAugment and AugMix pick from, of
    strength `factor` (a pair), as Keras builds them; augmentation `i` (in this
    order) gets the seed `seed + i + 1`."""
    seeds = None if seed is None else iter(range(seed + 1, seed + 12))

    def common():
        return {"data_format": data_format, "dtype": dtype,
                "seed": None if seeds is None else next(seeds)}

    warp = {"interpolation": interpolation}
    return {
        "random_shear": RandomShear(factor, factor, **warp, **common()),
        "random_translation": RandomTranslation(factor, factor, **warp, **common()),
        "random_rotation": RandomRotation(factor, **warp, **common()),
        "random_brightness": RandomBrightness(factor, value_range, **common()),
        "random_color_degeneration": RandomColorDegeneration(factor, value_range, **common()),
        "random_contrast": RandomContrast(factor, value_range, **common()),
        "random_sharpness": RandomSharpness(factor, value_range, **common()),
        "random_posterization": RandomPosterization(max(1, int(8 * factor[1])), value_range,
                                                    **common()),
        "solarization": Solarization(factor, factor, value_range, **common()),
        "auto_contrast": AutoContrast(value_range, data_format=data_format, dtype=dtype),
        "equalization": Equalization(value_range, data_format=data_format, dtype=dtype),
    }


@export("loopax.layers.RandAugment")
class RandAugment(_ImageAugmentation):
    """Applies `num_ops` augmentations in a row, each picked uniformly (per
    batch) from: shear, translation, rotation, brightness, colour
    degeneration, contrast, sharpness, posterization, solarization,
    auto-contrast and equalization, all of strength `factor`.

    Each augmentation draws its own parameters per image, as the layer of that
    name does (Keras's transformation dict: `{"transforms": {layer: params},
    "layer_idxes": (num_ops,)}`).

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        num_ops: How many augmentations are applied in a row (default 2).
        factor: A number `f` (`[0, f]`) or a pair, in [0, 1]: the strength (default 0.5).
        interpolation: `"bilinear"` (the default) or `"nearest"`, for the warps.
        seed: An int, or None for a random seed (augmentation `i` gets `seed + i + 1`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of [0, 1], `num_ops` not a positive int, `value_range`
            not a pair, or an unknown `interpolation`.
    """

    _AUGMENT_LAYERS = ("random_shear", "random_translation", "random_rotation",
                       "random_brightness", "random_color_degeneration", "random_contrast",
                       "random_sharpness", "random_posterization", "solarization",
                       "auto_contrast", "equalization")

    def __init__(self, value_range=(0, 255), num_ops=2, factor=0.5, interpolation="bilinear",
                 seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if not isinstance(num_ops, int) or isinstance(num_ops, bool) or num_ops < 1:
            raise ValueError(f"RandAugment: `num_ops` must be a positive int; got {num_ops!r}.")
        self.value_range = _value_range(value_range, "RandAugment")
        self.num_ops = num_ops
        self.factor = _factor_pair(factor, (0, 1), "RandAugment")
        self.interpolation = _check_interpolation(interpolation, "RandAugment")
        for name, layer in policy_layers(self.factor, self.value_range, self.interpolation,
                                         self.seed, self.data_format,
                                         self.dtype_policy).items():
            setattr(self, name, layer)

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        return {"transforms": {name: getattr(self, name).get_random_transformation(
                    images, training=True) for name in self._AUGMENT_LAYERS},
                "layer_idxes": jax.random.randint(self.seed_generator.next(), (self.num_ops,),
                                                  0, len(self._AUGMENT_LAYERS))}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        transforms = transformation["transforms"]
        branches = [lambda x, name=name: getattr(self, name).transform_images(
            x, transforms[name]) for name in self._AUGMENT_LAYERS]
        for i in range(self.num_ops):
            images = jax.lax.switch(transformation["layer_idxes"][i], branches, images)
        return images

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "num_ops": self.num_ops, "factor": self.factor,
                "interpolation": self.interpolation}
