"""Preprocessing layers: Rescaling, Normalization (with `adapt`), and the
image layers Resizing, CenterCrop, RandomFlip, RandomCrop.

Images are `(batch, height, width, channels)` or one image `(height, width,
channels)` (channels-last), or channels-first with
`data_format="channels_first"`. The random layers act only with
`training=True` and draw from their own `SeedGenerator`.
"""

from __future__ import annotations

import random as _py_random

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import random
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import positive_int, standardize_data_format
from loopax.src.layers.layer import Layer
from loopax.src.ops.image import RESIZE_INTERPOLATIONS, resize
from loopax.src.tensor import as_tensor, unwrap

_EPSILON = 1e-7  # Keras' backend.epsilon()


@export("loopax.layers.Rescaling")
class Rescaling(Layer):
    """`inputs · scale + offset` (e.g. `Rescaling(1 / 255)` for pixels), in the
    layer's float dtype; `scale`/`offset` may be arrays broadcast to the input.

    Output shape = input shape (or the broadcast shape).

    Args:
        scale: The factor, a number or an array.
        offset: Added after scaling, a number or an array (default 0.0).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset
        self.built = True

    def call(self, inputs):
        x = jnp.asarray(unwrap(inputs)).astype(self.dtype)
        return x * jnp.asarray(self.scale, self.dtype) + jnp.asarray(self.offset, self.dtype)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


@export("loopax.layers.Normalization")
class Normalization(Layer):
    """`(inputs - mean) / max(sqrt(variance), 1e-7)` per feature along `axis`
    (`invert=True`: the inverse map).

    Give `mean` and `variance`, or call `adapt(data)` to compute them from a
    NumPy array / JAX array (population statistics over every axis but
    `axis`). Adapted statistics live in non-trainable weights `mean`,
    `variance` (and an unused `count`, for Keras's weight layout), so they are
    saved with the model.

    Output shape = input shape, in the layer's dtype.

    Args:
        axis: The feature axis or axes that keep their own statistics (default -1);
            None means one mean and variance for all entries.
        mean: The mean per feature (a number or an array of the kept axes' shape), or
            None to `adapt`.
        variance: The variance per feature, given together with `mean`.
        invert: Map normalized values back, `mean + x · std` (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: only one of `mean`/`variance` is given, or (at build) `axis` is out
            of range or of unknown size.
    """

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis)
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: pass both `mean` and `variance`, or neither "
                             "(and call `adapt(data)`).")
        self.input_mean, self.input_variance = mean, variance
        self.invert = invert

    def build(self, input_shape):
        rank = len(input_shape)
        if any(not -rank <= a < rank for a in self.axis):
            raise ValueError(f"Normalization {self.name!r}: `axis` {self.axis} is out of range "
                             f"for inputs of shape {tuple(input_shape)}.")
        self._keep = tuple(sorted(a % rank for a in self.axis))
        if any(input_shape[a] is None for a in self._keep):
            raise ValueError(f"Normalization {self.name!r}: the kept axes {self._keep} must "
                             f"be known; got input shape {tuple(input_shape)}.")
        self._reduce = tuple(a for a in range(rank) if a not in self._keep)
        self._broadcast = tuple(input_shape[a] if a in self._keep else 1 for a in range(rank))
        stats_shape = tuple(input_shape[a] for a in self._keep)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight(stats_shape, "zeros", name="mean",
                                              trainable=False)
            self.adapt_variance = self.add_weight(stats_shape, "ones", name="variance",
                                                  trainable=False)
            self.count = self.add_weight((), "zeros", dtype="int32", name="count",
                                         trainable=False)
        self.built = True

    def adapt(self, data):
        """Sets `mean` and `variance` from `data`, an array of samples shaped
        like the layer's input (`count` stays 0, as Keras 3 leaves it)."""
        if self.input_mean is not None:
            raise ValueError(f"Normalization {self.name!r} was given `mean` and `variance`; "
                             "adapt() would overwrite them.")
        data = np.asarray(unwrap(data), dtype=np.float64)
        if not self.built:
            self._build_input_shape = data.shape   # saved as its build config, as Keras
            self.build(data.shape)
        mean = data.mean(axis=self._reduce)
        variance = data.var(axis=self._reduce)
        self.adapt_mean.assign(jnp.asarray(mean, self.dtype))
        self.adapt_variance.assign(jnp.asarray(variance, self.dtype))

    @property
    def mean(self):
        """The mean the layer subtracts, shaped to broadcast against the input (as
        Keras's `mean`: `(1, features)` for `axis=-1`), after `adapt` or `build`."""
        return self._statistic(0, "mean")

    @property
    def variance(self):
        """The variance the layer divides by (its square root), shaped as `mean`."""
        return self._statistic(1, "variance")

    def _statistic(self, index, what):
        if not self.built:
            raise AttributeError(
                f"Normalization {self.name!r} has no `{what}` yet: call `adapt(data)` "
                f"(or the layer, or `build(input_shape)`) first.")
        return as_tensor(self._statistics()[index])

    def _statistics(self):
        """(mean, variance), broadcastable to the input."""
        if self.input_mean is None:
            return (self.adapt_mean.value.reshape(self._broadcast),
                    self.adapt_variance.value.reshape(self._broadcast))
        mean = jnp.asarray(self.input_mean, self.dtype)
        variance = jnp.asarray(self.input_variance, self.dtype)
        if mean.ndim:  # given for the kept axes, aligned from the last one
            shape = [1] * len(self._broadcast)
            for i in range(1, mean.ndim + 1):
                shape[self._keep[-i]] = mean.shape[-i]
            mean, variance = mean.reshape(shape), variance.reshape(shape)
        return mean, variance

    def call(self, inputs):
        x = jnp.asarray(unwrap(inputs)).astype(self.dtype)
        mean, variance = self._statistics()
        std = jnp.maximum(jnp.sqrt(variance), _EPSILON)
        return mean + x * std if self.invert else (x - mean) / std

    def get_config(self):
        as_list = lambda v: np.asarray(v).tolist() if v is not None else None
        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": as_list(self.input_mean), "variance": as_list(self.input_variance)}


class _ImageLayer(Layer):
    """Base of the image layers: target `height`, `width` and the layout."""

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.height = positive_int(height, "height", owner)
        self.width = positive_int(width, "width", owner)
        self.data_format = standardize_data_format(data_format)
        self.built = True

    def _hw_axes(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"{type(self).__name__} {self.name!r}: expects images of rank 3 "
                             f"(h, w, c) or 4 (batch, h, w, c); got shape {tuple(x.shape)}.")
        first = x.ndim - 3
        return (first, first + 1) if self.data_format == "channels_last" \
            else (first + 1, first + 2)

    def _crop(self, x, top, left):
        h_axis, w_axis = self._hw_axes(x)
        x = jax.lax.dynamic_slice_in_dim(x, top, self.height, h_axis)
        return jax.lax.dynamic_slice_in_dim(x, left, self.width, w_axis)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "data_format": self.data_format}


@export("loopax.layers.Resizing")
class Resizing(_ImageLayer):
    """Resizes images to `(height, width)` with `loopax.ops.image.resize`.

    Input: images `(batch, height, width, channels)` or one image
    `(height, width, channels)` (channels first with `"channels_first"`); output
    `(batch, height, width, channels)` (or one image) with the target size, in the
    layer's dtype.

    Args:
        height: The output height, a positive int.
        width: The output width, a positive int.
        interpolation: `"bilinear"` (the default), `"nearest"`, `"bicubic"`,
            `"lanczos3"` or `"lanczos5"`.
        crop_to_aspect_ratio: Crop the largest centred box of the target aspect
            ratio first, so the image is not distorted (default False).
        pad_to_aspect_ratio: Pad to the target aspect ratio first instead (default
            False).
        fill_mode: How padding is filled; only `"constant"` is supported.
        fill_value: The padding value (default 0.0).
        antialias: Low-pass filter when downsampling (default False).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a non-positive size, an unknown `interpolation`, or (when called)
            images not of rank 3 or 4.
    """

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0,
                 antialias=False, data_format=None, **kwargs):
        super().__init__(height, width, data_format, **kwargs)
        if interpolation not in RESIZE_INTERPOLATIONS:
            raise ValueError(f"Resizing: `interpolation` must be one of "
                             f"{RESIZE_INTERPOLATIONS}, got {interpolation!r}.")
        self.interpolation = interpolation
        self.crop_to_aspect_ratio, self.pad_to_aspect_ratio = crop_to_aspect_ratio, \
            pad_to_aspect_ratio
        self.fill_mode, self.fill_value, self.antialias = fill_mode, fill_value, antialias

    def call(self, inputs):
        x = jnp.asarray(unwrap(inputs)).astype(self.dtype)
        self._hw_axes(x)
        return resize(x, (self.height, self.width), interpolation=self.interpolation,
                      antialias=self.antialias, crop_to_aspect_ratio=self.crop_to_aspect_ratio,
                      pad_to_aspect_ratio=self.pad_to_aspect_ratio, fill_mode=self.fill_mode,
                      fill_value=self.fill_value, data_format=self.data_format)

    def get_config(self):
        return {**super().get_config(), "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": self.antialias}


@export("loopax.layers.CenterCrop")
class CenterCrop(_ImageLayer):
    """The central `(height, width)` box; an image smaller than that is
    cropped to the target aspect ratio and resized up instead (as Keras).

    Input: images `(batch, height, width, channels)` or one image
    `(height, width, channels)` (channels first with `"channels_first"`); output
    `(batch, height, width, channels)` (or one image) with the target size, in the
    layer's dtype.

    Args:
        height: The crop height, a positive int.
        width: The crop width, a positive int.
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a non-positive size, or (when called) images not of rank 3 or 4.
    """

    def call(self, inputs):
        x = jnp.asarray(unwrap(inputs)).astype(self.dtype)
        h_axis, w_axis = self._hw_axes(x)
        dh, dw = x.shape[h_axis] - self.height, x.shape[w_axis] - self.width
        if dh < 0 or dw < 0:
            return resize(x, (self.height, self.width), crop_to_aspect_ratio=True,
                          data_format=self.data_format)
        return self._crop(x, dh // 2, dw // 2)


@export("loopax.layers.RandomCrop")
class RandomCrop(_ImageLayer):
    """In training, one random `(height, width)` box for the whole batch;
    the identity at inference (as Keras 3). An input not larger than the box
    in both dimensions is instead cut from the start of its centred
    target-aspect-ratio box and resized to `(height, width)` (as Keras).

    Input: images `(batch, h, w, channels)` or one image `(h, w, channels)`; in
    training the output has spatial size `(height, width)`, in the layer's dtype.

    Args:
        height: The crop height, a positive int.
        width: The crop width, a positive int.
        seed: An int; None draws one now (and saves it in the config, as Keras).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a non-positive size, or (when called) images not of rank 3 or 4.
    """

    def __init__(self, height, width, seed=None, data_format=None, **kwargs):
        super().__init__(height, width, data_format, **kwargs)
        # As Keras's RandomCrop: a missing seed is drawn now and saved.
        self.seed = seed if seed is not None else _py_random.randint(0, 2**31 - 1)
        self.seed_generator = random.SeedGenerator(self.seed)

    def call(self, inputs, training=True):
        x = jnp.asarray(unwrap(inputs)).astype(self.dtype)
        h_axis, w_axis = self._hw_axes(x)
        if not training:
            return x
        height, width = x.shape[h_axis], x.shape[w_axis]
        if height > self.height and width > self.width:
            top_key, left_key = jax.random.split(self.seed_generator.next())
            top = jax.random.randint(top_key, (), 0, height - self.height + 1)
            left = jax.random.randint(left_key, (), 0, width - self.width + 1)
            return self._crop(x, top, left)
        box_h = max(min(height, int(width * self.height / self.width)), 1)
        box_w = max(min(width, int(height * self.width / self.height)), 1)
        index = [slice(None)] * x.ndim
        top, left = int((height - box_h) / 2), int((width - box_w) / 2)
        index[h_axis] = slice(top, top + self.height)
        index[w_axis] = slice(left, left + self.width)
        x = x[tuple(index)]
        if (x.shape[h_axis], x.shape[w_axis]) != (self.height, self.width):
            x = resize(x, (self.height, self.width), data_format=self.data_format)
        return x

    def get_config(self):
        return {**super().get_config(), "seed": self.seed}
