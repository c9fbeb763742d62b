"""AugMix (Hendrycks et al., 2020): several chains of random augmentations,
mixed with Dirichlet weights and then blended with the original image."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.preprocessing.image.augmentation import _factor_pair, _value_range
from loopax.src.layers.preprocessing.image.augmentation_policies import policy_layers
from loopax.src.layers.preprocessing.image.geometric_augmentation import _check_interpolation
from loopax.src.layers.preprocessing.image.image_augmentation import _ImageAugmentation

# Keras 3.15's order: the first seven always, the last four with `all_ops=True`.
_LAYERS = ("random_shear", "random_translation", "random_rotation", "random_posterization",
           "solarization", "auto_contrast", "equalization", "random_brightness",
           "random_color_degeneration", "random_contrast", "random_sharpness")


def _positive_int(value, argument):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"AugMix: `{argument}` must be a positive int; got {value!r}.")
    return value


@export("loopax.layers.AugMix")
class AugMix(_ImageAugmentation):
    """Mixes `num_chains` randomly augmented copies of each batch with the batch.

    Each chain applies up to `chain_depth` augmentations in a row: every step
    picks one of the augmentations (or none) uniformly. The chains' outputs are
    summed with weights `w ~ Dirichlet(alpha)`, and the result is
    `m · images + (1 - m) · mix` with `m ~ Beta(alpha, alpha)`, clipped to
    `value_range`. The picks and weights are drawn once per batch; each
    augmentation draws its own parameters per image.

    A transformation drawn by Keras (`{"chain_mixing_weights", "weight_sample",
    "chain_transforms": [[{"layer_name", "transformation"}, ...], ...]}`) replays
    in `transform_images`. Bounding boxes in a dict input pass through unchanged
    (as Keras).

    Input: images `(batch, height, width, channels)`, one image, or a dict with
    `"images"` (and `"labels"`, `"bounding_boxes"`); output alike, in the layer's
    dtype. Acts only with `training=True`.

    Args:
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        num_chains: How many chains are mixed (default 3).
        chain_depth: The most augmentations in one chain (default 3).
        factor: A number `f` (`[0, f]`) or a pair, in [0, 1]: the augmentations'
            strength (default 0.3).
        alpha: The Dirichlet and Beta parameter (default 1.0).
        all_ops: True (the default): eleven augmentations; False: without
            brightness, colour degeneration, contrast and sharpness.
        interpolation: `"bilinear"` (the default) or `"nearest"`, for the warps.
        seed: An int, or None for a random seed.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of [0, 1], `num_chains`/`chain_depth` not positive ints,
            `value_range` not a pair, or an unknown `interpolation`.
    """

    _DICT_KEYS = ("images", "labels", "bounding_boxes")

    def __init__(self, value_range=(0, 255), num_chains=3, chain_depth=3, factor=0.3,
                 alpha=1.0, all_ops=True, interpolation="bilinear", seed=None, data_format=None,
                 **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.value_range = _value_range(value_range, "AugMix")
        self.num_chains = _positive_int(num_chains, "num_chains")
        self.chain_depth = _positive_int(chain_depth, "chain_depth")
        self.factor = _factor_pair(factor, (0, 1), "AugMix")
        self.alpha = alpha
        self.all_ops = bool(all_ops)
        self.interpolation = _check_interpolation(interpolation, "AugMix")
        self._layer_names = _LAYERS if self.all_ops else _LAYERS[:7]
        layers = policy_layers(self.factor, self.value_range, self.interpolation, seed,
                               self.data_format, self.dtype_policy)
        for name in self._layer_names:
            setattr(self, name, layers[name])

    def get_random_transformation(self, images, training=True):
        """The mixing weights, and per chain and step the pick (index into the
        augmentations; their count means none) with every augmentation's
        parameters (so the pick can stay a traced value)."""
        if not training:
            return None
        weights_key, mix_key, picks_key = jax.random.split(self.seed_generator.next(), 3)
        picks = jax.random.randint(picks_key, (self.num_chains, self.chain_depth), 0,
                                   len(self._layer_names) + 1)
        chains = [[{"layer_index": picks[c, d],
                    "transforms": {name: getattr(self, name).get_random_transformation(
                        images, training=True) for name in self._layer_names}}
                   for d in range(self.chain_depth)] for c in range(self.num_chains)]
        return {"chain_mixing_weights": jax.random.dirichlet(
                    weights_key, jnp.full((self.num_chains,), self.alpha)),
                "weight_sample": jax.random.beta(mix_key, self.alpha, self.alpha),
                "chain_transforms": chains}

    def _step(self, images, step):
        if "layer_name" in step:  # Keras's: the pick is a name
            return getattr(self, step["layer_name"]).transform_images(
                images, step["transformation"])
        transforms = step["transforms"]
        branches = [lambda x, name=name: getattr(self, name).transform_images(
            x, transforms[name]) for name in self._layer_names] + [lambda x: x]
        return jax.lax.switch(step["layer_index"], branches, images)

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        weights = jnp.asarray(transformation["chain_mixing_weights"], images.dtype)
        mixed = jnp.zeros_like(images)
        for index, chain in enumerate(transformation["chain_transforms"]):
            augmented = images
            for step in chain:
                augmented = self._step(augmented, step)
            mixed = mixed + augmented * weights[index]
        keep = jnp.asarray(transformation["weight_sample"], images.dtype)
        return jnp.clip(keep * images + (1 - keep) * mixed, *self.value_range)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "num_chains": self.num_chains, "chain_depth": self.chain_depth,
                "factor": self.factor, "alpha": self.alpha, "all_ops": self.all_ops,
                "interpolation": self.interpolation}
