"""Keras 3's image augmentation layers beyond the affine/colour basics of
`augmentation.py`: MixUp, CutMix, RandomGrayscale, RandomInvert,
Solarization, RandomPosterization, AutoContrast, Equalization and
RandomErasing.

As in Keras, each layer splits its work in two:
`get_random_transformation(images, training)` draws the parameters (with
Keras's keys, so a transformation drawn by Keras can be replayed here) and
`transform_images(images, transformation)` applies them to a batch
`(batch, height, width, channels)` (channels first with
`data_format="channels_first"`). Calling the layer accepts one image
`(height, width, channels)` too, or a dict `{"images": ..., "labels": ...}`
(labels are mixed by MixUp/CutMix and passed through by the others).
Layers act with `training=True` only, except AutoContrast, which Keras
applies at inference as well.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src import random
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import standardize_data_format
from loopax.src.layers.layer import Layer
from loopax.src.layers.preprocessing.image.augmentation import (
    _factor_pair,
    _RandomImageLayer,
    _value_range,
)
from loopax.src.tensor import unwrap

_GRAYSCALE_WEIGHTS = (0.2989, 0.5870, 0.1140)  # ITU-R 601, as tf.image.rgb_to_grayscale


class _ImageAugmentation(_RandomImageLayer):
    """Base: call on a batch, one image or a dict of images and labels."""

    _ACTS_AT_INFERENCE = False
    _SEEDED = True  # False: deterministic, no seed generator (and no seed in the config)
    _DICT_KEYS = ("images", "labels")

    def __init__(self, seed=None, data_format=None, **kwargs):
        Layer.__init__(self, **kwargs)
        self.seed = seed
        self.data_format = standardize_data_format(data_format)
        if self._SEEDED:
            self.seed_generator = random.SeedGenerator(seed)
        self.built = True

    def get_config(self):
        config = super().get_config()
        if not self._SEEDED:
            config.pop("seed")
        return config

    def call(self, data, training=True):
        if not isinstance(data, dict):
            return self._augment(data, None, training)[0]
        unknown = sorted(set(data) - set(self._DICT_KEYS))
        if unknown or "images" not in data:
            raise ValueError(f"{type(self).__name__} {self.name!r}: a dict input needs the key "
                             f"'images' and may have {self._DICT_KEYS[1:]}; got keys "
                             f"{sorted(data)} (unsupported here: {unknown}).")
        images, labels = self._augment(data["images"], data.get("labels"), training)
        out = dict(data, images=images)
        if labels is not None:
            out["labels"] = labels
        return out

    def _augment(self, images, labels, training):
        """(images, labels) transformed alike; one image is handled as a batch of one."""
        images = self._images(images)
        if not (training or self._ACTS_AT_INFERENCE):
            return images, labels
        single = images.ndim == 3
        batch = images[None] if single else images
        transformation = self.get_random_transformation(batch, training=True)
        batch = self.transform_images(batch, transformation, training=True)
        if labels is not None:
            labels = jnp.asarray(unwrap(labels))
            labels = self.transform_labels(labels[None] if single else labels, transformation,
                                           training=True)
            labels = labels[0] if single else labels
        return (batch[0] if single else batch), labels

    def transform_labels(self, labels, transformation, training=True):
        return labels

    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else -3

    def _spatial_axes(self):
        return (-3, -2) if self.data_format == "channels_last" else (-2, -1)

    def _to_255(self, images):
        """Images mapped from `value_range` to 0..255 (Keras computes colours there)."""
        low, high = self.value_range
        return images if (low, high) == (0, 255) else (images - low) * (255.0 / (high - low))

    def _from_255(self, images):
        low, high = self.value_range
        return images if (low, high) == (0, 255) else images * ((high - low) / 255.0) + low


def _mix_factor(factor, owner, argument):
    """`(lower, upper)` in [0, 1] from a number `f` (-> `(0, f)`) or a pair."""
    message = (f"{owner}: `{argument}` must be a number or a pair of numbers in [0, 1]; "
               f"got {factor!r}.")
    pair = tuple(factor) if isinstance(factor, (tuple, list)) else (0, factor)
    if len(pair) != 2 or not all(isinstance(f, (int, float)) and not isinstance(f, bool)
                                 and 0 <= f <= 1 for f in pair):
        raise ValueError(message)
    return tuple(sorted(pair))


def _box_masks(corners, images_shape, data_format):
    """Boolean `images_shape` masks, True inside each image's box.

    `corners` = (x0, x1, y0, y1), each `(batch,)`; a pixel at integer
    (row, column) is inside when `x0 <= column < x1` and `y0 <= row < y1`.
    """
    x0, x1, y0, y1 = (jnp.reshape(c, (-1, 1, 1)) for c in corners)
    height, width = (images_shape[1], images_shape[2]) if data_format == "channels_last" \
        else (images_shape[2], images_shape[3])
    rows = jnp.arange(height, dtype=x0.dtype)[None, :, None]
    columns = jnp.arange(width, dtype=x0.dtype)[None, None, :]
    inside = (columns >= x0) & (columns < x1) & (rows >= y0) & (rows < y1)
    inside = inside[..., None] if data_format == "channels_last" else inside[:, None]
    return jnp.broadcast_to(inside, images_shape)


def _random_box(key, batch, length, ratio, dtype):
    """(start, end) `(batch,)`: a span of `ratio · length` at a uniform offset."""
    span = (ratio * length).astype(dtype)
    start = jax.random.uniform(key, (batch,), dtype) * (length - span)
    return start, start + span


@export("loopax.layers.MixUp")
class MixUp(_ImageAugmentation):
    """MixUp (Zhang et al., 2018): each image (and label) becomes
    `w · x + (1 - w) · x[perm]`, with one random permutation of the batch and
    `w ~ Beta(alpha, alpha)` per image.

    Input: images `(batch, height, width, channels)`, one image, or a dict
    `{"images": ..., "labels": (batch, classes)}`; output alike, in the layer's
    dtype. Acts only with `training=True`.

    Args:
        alpha: The Beta distribution's parameter (default 0.2); smaller values mix less.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, alpha=0.2, data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.alpha = alpha

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch = images.shape[0] if images.ndim == 4 else 1
        order_key, weight_key = jax.random.split(self.seed_generator.next())
        return {"mix_weight": jax.random.beta(weight_key, self.alpha, self.alpha, (batch,)),
                "permutation_order": jax.random.permutation(order_key, batch)}

    def _mix(self, values, transformation):
        weight = jnp.asarray(transformation["mix_weight"], values.dtype)
        weight = jnp.reshape(weight, (-1,) + (1,) * (values.ndim - 1))
        partners = jnp.take(values, jnp.asarray(transformation["permutation_order"]), axis=0)
        return weight * values + (1.0 - weight) * partners

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        return self._mix(images, transformation) if training and transformation else images

    def transform_labels(self, labels, transformation, training=True):
        labels = jnp.asarray(unwrap(labels))
        return self._mix(labels, transformation) if training and transformation else labels

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


@export("loopax.layers.CutMix")
class CutMix(_ImageAugmentation):
    """CutMix (Yun et al., 2019): a random box of each image is replaced by
    the same box of another image of the batch; labels are mixed by the
    share of the image left unchanged.

    The box covers `1 - λ` of the image, `λ ~ Beta(α, α)` with `α` drawn
    uniformly from `factor` once per batch. One image alone is left unchanged
    (there is nothing to mix with), as Keras.

    Input: images `(batch, height, width, channels)`, one image, or a dict
    `{"images": ..., "labels": (batch, classes)}`; output alike, in the layer's
    dtype. Acts only with `training=True`.

    Args:
        factor: A number `f` (`α` in `[0, f]`) or a pair, in [0, 1] (default 1.0).
        seed: An int, or None for a random seed.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of [0, 1].
    """

    def __init__(self, factor=1.0, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "CutMix")

    def get_random_transformation(self, images, training=True):
        if not training or images.ndim == 3:
            return None
        batch, height, width = self._batch_and_size(images)
        keys = jax.random.split(self.seed_generator.next(), 5)
        alpha = jax.random.uniform(keys[0], (), minval=self.factor[0],
                                   maxval=self.factor[1]) + 1e-6
        ratio = jnp.sqrt(1.0 - jax.random.beta(keys[1], alpha, alpha, (batch,)))
        x0, x1 = _random_box(keys[2], batch, width, ratio, images.dtype)
        y0, y1 = _random_box(keys[3], batch, height, ratio, images.dtype)
        return {"permutation_order": jax.random.permutation(keys[4], batch),
                "batch_masks": _box_masks((x0, x1, y0, y1), images.shape, self.data_format),
                "mix_weight": (1.0 - (x1 - x0) * (y1 - y0) / (width * height))[:, None, None,
                                                                               None]}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        partners = jnp.take(images, jnp.asarray(transformation["permutation_order"]), axis=0)
        return jnp.where(transformation["batch_masks"], partners, images)

    def transform_labels(self, labels, transformation, training=True):
        labels = jnp.asarray(unwrap(labels))
        if not training or transformation is None:
            return labels
        weight = jnp.reshape(jnp.asarray(transformation["mix_weight"]), (-1, 1))
        partners = jnp.take(labels, jnp.asarray(transformation["permutation_order"]), axis=0)
        return weight * labels + (1.0 - weight) * partners

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@export("loopax.layers.RandomGrayscale")
class RandomGrayscale(_ImageAugmentation):
    """Turns each image to grayscale with probability `factor`, keeping its
    channel count (every channel holds the luminance
    `0.2989 R + 0.5870 G + 0.1140 B`).

    Input: RGB (3 channels) or grayscale (1 channel) images `(batch, height,
    width, channels)` or one image; output of the same shape, in the layer's dtype.
    Acts only with `training=True`.

    Args:
        factor: The probability in [0, 1] (default 0.5).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of [0, 1], or (when called) images with other than 1
            or 3 channels.
    """

    def __init__(self, factor=0.5, data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if not isinstance(factor, (int, float)) or not 0 <= factor <= 1:
            raise ValueError(f"RandomGrayscale: `factor` (the probability) must be a number "
                             f"in [0, 1]; got {factor!r}.")
        self.factor = factor

    def get_random_transformation(self, images, training=True):
        """A `(batch, 1, 1, 1)` boolean array (as Keras: not a dict)."""
        if not training:
            return None
        batch = images.shape[0] if images.ndim == 4 else 1
        draw = jax.random.uniform(self.seed_generator.next(), (batch, 1, 1, 1))
        return draw < self.factor

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        axis = self._channel_axis()
        if images.shape[axis] not in (1, 3):
            raise ValueError(f"RandomGrayscale {self.name!r}: expects 3 (RGB) or 1 (grayscale) "
                             f"channels; got images of shape {tuple(images.shape)} "
                             f"({self.data_format}).")
        if images.shape[axis] == 1:
            return images
        gray = jnp.tensordot(images, jnp.asarray(_GRAYSCALE_WEIGHTS, images.dtype),
                             axes=((images.ndim + axis) % images.ndim, 0))
        return jnp.where(transformation, jnp.expand_dims(gray, axis), images)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@export("loopax.layers.RandomInvert")
class RandomInvert(_ImageAugmentation):
    """Replaces each image `x` by `high - x` (`value_range = (low, high)`)
    with a probability drawn per image from `factor`.

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        factor: A number `p` (probability drawn from `[0, p]`) or a pair, in [0, 1]
            (default 1.0).
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        seed: An int, or None for a random seed.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of [0, 1] or `value_range` not a pair.
    """

    def __init__(self, factor=1.0, value_range=(0, 255), seed=None, data_format=None,
                 **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "RandomInvert")
        self.value_range = _value_range(value_range, "RandomInvert")

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch = images.shape[0] if images.ndim == 4 else 1
        probability_key, draw_key = jax.random.split(self.seed_generator.next())
        probability = jax.random.uniform(probability_key, (batch,), minval=self.factor[0],
                                         maxval=self.factor[1])
        return {"apply_inversion": jax.random.uniform(draw_key, (batch,)) < probability}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        apply = jnp.reshape(transformation["apply_inversion"], (-1, 1, 1, 1))
        return jnp.where(apply, self.value_range[1] - images, images)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}


@export("loopax.layers.Solarization")
class Solarization(_ImageAugmentation):
    """Solarizes images: on the 0..255 scale, adds a random `addition`,
    clips to 0..255, and replaces each pixel `p >= threshold` by `255 - p`.

    Per image, `addition` is drawn from `[a0, a1 · 255]` and `threshold` from
    `[t0, t1 · 255]` (`(a0, a1)`, `(t0, t1)` from the factors; the lower ends
    are not scaled by 255, as in Keras 3.15). With the default factors (0) every
    pixel is inverted.

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        addition_factor: A number `f` (`(0, f)`) or a pair, in [0, 1] (default 0.0).
        threshold_factor: Likewise for the threshold (default 0.0).
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `data_format`, ...).

    Raises:
        ValueError: a factor out of [0, 1] or `value_range` not a pair.
    """

    def __init__(self, addition_factor=0.0, threshold_factor=0.0, value_range=(0, 255),
                 seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.addition_factor = _mix_factor(addition_factor, "Solarization", "addition_factor")
        self.threshold_factor = _mix_factor(threshold_factor, "Solarization",
                                            "threshold_factor")
        self.value_range = sorted(_value_range(value_range, "Solarization"))

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        shape = (images.shape[0], 1, 1, 1) if images.ndim == 4 else (1, 1, 1)
        addition_key, threshold_key = jax.random.split(self.seed_generator.next())
        (a0, a1), (t0, t1) = self.addition_factor, self.threshold_factor
        return {"additions": jax.random.uniform(addition_key, shape, self.dtype, a0, a1 * 255),
                "thresholds": jax.random.uniform(threshold_key, shape, self.dtype, t0, t1 * 255)}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        shifted = jnp.clip(self._to_255(images) + transformation["additions"], 0, 255)
        solarized = jnp.where(shifted < transformation["thresholds"], shifted, 255 - shifted)
        return self._from_255(solarized)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "addition_factor": self.addition_factor,
                "threshold_factor": self.threshold_factor}


@export("loopax.layers.RandomPosterization")
class RandomPosterization(_ImageAugmentation):
    """Keeps only the `bits` highest bits of each 8-bit colour value, `bits`
    drawn per image from `factor` (integers in `[low, high)`; a number `f`
    means `[1, f)`, and `(b, b)` always `b` bits).

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        factor: A number or a pair of integers in [1, 8].
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        seed: An int, or None for a random seed.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor` out of [1, 8] or `value_range` not a pair.
    """

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (1, 8), "RandomPosterization")
        self.value_range = sorted(_value_range(value_range, "RandomPosterization"))

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch = images.shape[0] if images.ndim == 4 else 1
        low, high = (int(f) for f in self.factor)
        bits = jnp.full((batch,), low, "uint8") if low == high else jax.random.randint(
            self.seed_generator.next(), (batch,), low, high, "uint8")
        return {"shift_factor": (8 - bits).astype("uint8")}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        shift = jnp.reshape(jnp.asarray(transformation["shift_factor"], "uint8"), (-1, 1, 1, 1))
        pixels = self._to_255(images).astype("uint8")
        posterized = jnp.left_shift(jnp.right_shift(pixels, shift), shift)
        return self._from_255(posterized.astype(images.dtype))

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}


@export("loopax.layers.AutoContrast")
class AutoContrast(_ImageAugmentation):
    """Stretches each image channel to the full `value_range`: its lowest
    value maps to `low`, its highest to `high` (a constant channel is kept).
    Deterministic, and applied at inference too (as Keras).

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype.

    Args:
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        **kwargs: Base layer arguments (`name`, `dtype`, `data_format`, ...).

    Raises:
        ValueError: `value_range` not a pair.
    """

    _ACTS_AT_INFERENCE = True
    _SEEDED = False

    def __init__(self, value_range=(0, 255), data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.value_range = sorted(_value_range(value_range, "AutoContrast"))

    def get_random_transformation(self, images, training=True):
        return None

    def transform_images(self, images, transformation=None, training=True):
        images = self._images(images)
        scaled = self._to_255(images)
        low = jnp.min(scaled, axis=self._spatial_axes(), keepdims=True)
        high = jnp.max(scaled, axis=self._spatial_axes(), keepdims=True)
        scale = 255.0 / (high - low)
        stretched = self._from_255(jnp.clip(scaled * scale - low * scale, 0.0, 255.0))
        return jnp.where(jnp.isnan(stretched), images, stretched)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range}


@export("loopax.layers.Equalization")
class Equalization(_ImageAugmentation):
    """Histogram equalization of each channel on the 0..255 scale: values
    are binned into `bins` bins and remapped through the normalised
    cumulative histogram, so that the channel's values spread evenly.

    As Keras 3.15, the histogram of a channel is taken over the whole batch
    (one lookup table per channel, shared by the batch's images); a channel
    whose values all fall into one bin is left unchanged.

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        bins: The number of histogram bins (default 256).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `value_range` not a pair or `bins` not a positive int.
    """

    _SEEDED = False

    def __init__(self, value_range=(0, 255), bins=256, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
            raise ValueError(f"Equalization: `bins` must be a positive int; got {bins!r}.")
        self.bins = bins
        self.value_range = sorted(_value_range(value_range, "Equalization"))

    def get_random_transformation(self, images, training=True):
        return None

    def _equalize(self, channel):
        """One channel (any shape, 0..255) remapped by its histogram's CDF."""
        top = self.bins - 1
        bins = jnp.clip((channel * (top / 255.0)).astype("int32"), 0, top)
        histogram = jnp.bincount(jnp.ravel(bins), length=self.bins)
        cdf = jnp.cumsum(histogram)
        cdf_min = cdf[jnp.argmax(cdf > 0)]
        denominator = jnp.where(cdf[-1] == cdf_min, 1, cdf[-1] - cdf_min)
        table = jnp.clip(jnp.round((cdf - cdf_min) * 255 / denominator), 0, 255)
        lookup = jnp.clip(channel / 255.0 * top, 0, top).astype("int32")
        equalized = jnp.take(table, lookup).astype(channel.dtype)
        return jnp.where(jnp.count_nonzero(histogram) <= 1, channel, equalized)

    def transform_images(self, images, transformation=None, training=True):
        images = self._images(images)
        if not training:
            return images
        axis = self._channel_axis()
        scaled = self._to_255(images)
        channels = [self._equalize(jnp.take(scaled, i, axis=axis))
                    for i in range(images.shape[axis])]
        return self._from_255(jnp.stack(channels, axis=axis))

    def get_config(self):
        return {**super().get_config(), "bins": self.bins, "value_range": self.value_range}


@export("loopax.layers.RandomErasing")
class RandomErasing(_ImageAugmentation):
    """Random Erasing (Zhong et al., 2020): with a probability drawn per
    image from `factor`, a random box is filled with `fill_value` (or, when
    None, Gaussian noise `N(0, 1) · high`), clipped to `value_range`.

    The box's width and height are `sqrt(s) · size`, `s` drawn from `scale`
    separately for each side.

    Input: images `(batch, height, width, channels)` or one image; output of the
    same shape, in the layer's dtype. Acts only with `training=True`.

    Args:
        factor: A number `p` (probability drawn from `[0, p]`) or a pair, in [0, 1]
            (default 1.0).
        scale: A number or a pair in [0, 1]: the box's area fraction per side
            (default `(0.02, 0.33)`).
        fill_value: A number, three numbers (one per channel), or None for noise.
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        seed: An int, or None for a random seed.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `factor`/`scale` out of [0, 1], or `fill_value` not a number,
            three numbers or None.
    """

    def __init__(self, factor=1.0, scale=(0.02, 0.33), fill_value=None, value_range=(0, 255),
                 seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "RandomErasing")
        self.scale = _factor_pair(scale, (0, 1), "RandomErasing", "scale")
        numbers = isinstance(fill_value, (tuple, list)) and len(fill_value) == 3
        if not (fill_value is None or numbers or isinstance(fill_value, (int, float))):
            raise ValueError(f"RandomErasing: `fill_value` must be a number, three numbers "
                             f"(one per channel) or None (Gaussian noise); got {fill_value!r}.")
        self.fill_value = fill_value
        self.value_range = _value_range(value_range, "RandomErasing")

    def _fill(self, key, shape):
        if self.fill_value is None:
            fill = jax.random.normal(key, shape, self.dtype) * self.value_range[1]
        else:
            fill = jnp.broadcast_to(jnp.asarray(self.fill_value, self.dtype), shape) \
                if not isinstance(self.fill_value, (tuple, list)) or \
                self.data_format == "channels_last" else jnp.broadcast_to(
                    jnp.asarray(self.fill_value, self.dtype)[:, None, None], shape)
        return jnp.clip(fill, self.value_range[0], self.value_range[1])

    def get_random_transformation(self, images, training=True):
        if not training:
            return None
        batch, height, width = self._batch_and_size(images)
        keys = jax.random.split(self.seed_generator.next(), 6)
        sides = jnp.sqrt(jax.random.uniform(keys[0], (batch, 2), images.dtype, *self.scale))
        x0, x1 = _random_box(keys[1], batch, width, sides[:, 0], images.dtype)
        y0, y1 = _random_box(keys[2], batch, height, sides[:, 1], images.dtype)
        probability = jax.random.uniform(keys[3], (batch,), minval=self.factor[0],
                                         maxval=self.factor[1])
        shape = images.shape if images.ndim == 4 else (1,) + images.shape
        return {"apply_erasing": jax.random.uniform(keys[4], (batch,)) < probability,
                "batch_masks": _box_masks((x0, x1, y0, y1), shape, self.data_format),
                "fill_value": self._fill(keys[5], shape)}

    def transform_images(self, images, transformation, training=True):
        images = self._images(images)
        if not training or transformation is None:
            return images
        erased = jnp.where(transformation["batch_masks"], transformation["fill_value"], images)
        apply = jnp.reshape(transformation["apply_erasing"], (-1, 1, 1, 1))
        return jnp.where(apply, erased, images)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "scale": self.scale,
                "fill_value": self.fill_value, "value_range": self.value_range}
