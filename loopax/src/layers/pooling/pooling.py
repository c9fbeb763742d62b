"""Pooling layers: windowed max/average and global max/average, 1-D, 2-D and 3-D.

Channels-last input `(batch, *spatial, channels)` unless
`data_format="channels_first"`.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.layers.argument_checks import (
    check_window_fits,
    spatial_axes_of,
    standardize_data_format,
    standardize_padding,
    standardize_tuple,
    windowed_output_shape,
)
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.symbolic import closed_form_output_shape
from loopax.src.ops import window_pool
from loopax.src.tensor import unwrap


@closed_form_output_shape
class BasePooling(Layer):
    """Max or average over windows of `pool_size`, moved by `strides`
    (default: `pool_size`). "same" padding averages only real entries."""

    row_wise = True

    def __init__(self, rank, reduction, pool_size, strides=None, padding="valid",
                 data_format=None, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.rank, self.reduction = rank, reduction
        self.pool_size = standardize_tuple(pool_size, rank, "pool_size", owner)
        self.strides = standardize_tuple(strides if strides is not None else self.pool_size,
                                         rank, "strides", owner)
        self.padding = standardize_padding(padding, owner)
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)
        self.built = True  # no weights

    def _full(self, spatial):
        """Extends per-spatial-axis sizes with 1 for batch and channels."""
        return (1,) + spatial + (1,) if self.data_format == "channels_last" else (1, 1) + spatial

    def call(self, inputs):
        x = unwrap(inputs)
        spatial = x.shape[1:-1] if self.data_format == "channels_last" else x.shape[2:]
        check_window_fits(self, x.shape, spatial, self.pool_size, (1,) * self.rank,
                          self.padding, what="pool_size")
        padding, channels_last = self.padding.upper(), self.data_format == "channels_last"
        if self.reduction == "max":
            return window_pool.max_pool(x, self.pool_size, self.strides, padding,
                                        channels_last)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(self.dtype)
        total = window_pool.sum_pool(x, self.pool_size, self.strides, padding, channels_last)
        if self.padding == "valid":
            return total / math.prod(self.pool_size)
        # Count the real (unpadded) entries of each window.
        spatial_axes = range(1, self.rank + 1) if channels_last else range(2, self.rank + 2)
        ones = jnp.ones(self._full(tuple(x.shape[a] for a in spatial_axes)), x.dtype)
        count = window_pool.sum_pool(ones, self.pool_size, self.strides, padding, channels_last)
        return total / count

    def compute_output_shape(self, input_shape):
        """The input's shape with each spatial size pooled: "valid" keeps the
        windows that fit, "same" gives ceil(size / stride); None stays None."""
        if len(input_shape) == self.rank + 2:   # else windowed_output_shape refuses the rank
            spatial = [input_shape[a] for a in spatial_axes_of(self.rank, self.data_format)]
            check_window_fits(self, input_shape, spatial, self.pool_size, (1,) * self.rank,
                              self.padding, what="pool_size")
        return windowed_output_shape(self, input_shape, self.pool_size, self.strides,
                                     (1,) * self.rank, self.padding, self.data_format)

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


@export("loopax.layers.MaxPool1D", "loopax.layers.MaxPooling1D")
class MaxPooling1D(BasePooling):
    """Max over windows: `(batch, steps, channels)` -> `(batch, pooled_steps, channels)`.

    Each pooled size is `floor((n - pool) / stride) + 1` with `padding="valid"` and
    `ceil(n / stride)` with `"same"`.

    Args:
        pool_size: The window size, an int or a tuple of 1 ints (default 2).
        strides: The step between windows, an int or a tuple of 1 ints; None (the
            default) is `pool_size`.
        padding: `"valid"` (no padding) or `"same"` (pad so that every input entry is
            covered).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a malformed argument, or (when called) a window larger than the
            unpadded input.
    """

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(1, "max", pool_size, strides, padding, data_format, **kwargs)


@export("loopax.layers.MaxPool2D", "loopax.layers.MaxPooling2D")
class MaxPooling2D(BasePooling):
    """Max over windows: `(batch, h, w, channels)` -> `(batch, pooled_h, pooled_w, channels)`.

    Each pooled size is `floor((n - pool) / stride) + 1` with `padding="valid"` and
    `ceil(n / stride)` with `"same"`.

    Args:
        pool_size: The window size, an int or a tuple of 2 ints (default `(2, 2)`).
        strides: The step between windows, an int or a tuple of 2 ints; None (the
            default) is `pool_size`.
        padding: `"valid"` (no padding) or `"same"` (pad so that every input entry is
            covered).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a malformed argument, or (when called) a window larger than the
            unpadded input.
    """

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(2, "max", pool_size, strides, padding, data_format, **kwargs)


@export("loopax.layers.AveragePooling1D", "loopax.layers.AvgPool1D")
class AveragePooling1D(BasePooling):
    """Mean over windows: `(batch, steps, channels)` -> `(batch, pooled_steps, channels)`.

    Each pooled size is `floor((n - pool) / stride) + 1` with `padding="valid"` and
    `ceil(n / stride)` with `"same"`.

    Args:
        pool_size: The window size, an int or a tuple of 1 ints (default 2).
        strides: The step between windows, an int or a tuple of 1 ints; None (the
            default) is `pool_size`.
        padding: `"valid"` (no padding) or `"same"` (pad so that every input entry is
            covered; padded entries are not counted in the mean).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a malformed argument, or (when called) a window larger than the
            unpadded input.
    """

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(1, "average", pool_size, strides, padding, data_format, **kwargs)


@export("loopax.layers.AveragePooling2D", "loopax.layers.AvgPool2D")
class AveragePooling2D(BasePooling):
    """Mean over windows: `(batch, h, w, channels)` -> `(batch, pooled_h, pooled_w, channels)`.

    Each pooled size is `floor((n - pool) / stride) + 1` with `padding="valid"` and
    `ceil(n / stride)` with `"same"`.

    Args:
        pool_size: The window size, an int or a tuple of 2 ints (default `(2, 2)`).
        strides: The step between windows, an int or a tuple of 2 ints; None (the
            default) is `pool_size`.
        padding: `"valid"` (no padding) or `"same"` (pad so that every input entry is
            covered; padded entries are not counted in the mean).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a malformed argument, or (when called) a window larger than the
            unpadded input.
    """

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(2, "average", pool_size, strides, padding, data_format, **kwargs)


@export("loopax.layers.MaxPool3D", "loopax.layers.MaxPooling3D")
class MaxPooling3D(BasePooling):
    """Max over windows: `(batch, d, h, w, channels)` -> `(batch, d', h', w', channels)`.

    Each pooled size is `floor((n - pool) / stride) + 1` with `padding="valid"` and
    `ceil(n / stride)` with `"same"`.

    Args:
        pool_size: The window size, an int or a tuple of 3 ints (default `(2, 2, 2)`).
        strides: The step between windows, an int or a tuple of 3 ints; None (the
            default) is `pool_size`.
        padding: `"valid"` (no padding) or `"same"` (pad so that every input entry is
            covered).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a malformed argument, or (when called) a window larger than the
            unpadded input.
    """

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(3, "max", pool_size, strides, padding, data_format, **kwargs)


@export("loopax.layers.AveragePooling3D", "loopax.layers.AvgPool3D")
class AveragePooling3D(BasePooling):
    """Mean over windows: `(batch, d, h, w, channels)` -> `(batch, d', h', w', channels)`.

    Each pooled size is `floor((n - pool) / stride) + 1` with `padding="valid"` and
    `ceil(n / stride)` with `"same"`.

    Args:
        pool_size: The window size, an int or a tuple of 3 ints (default `(2, 2, 2)`).
        strides: The step between windows, an int or a tuple of 3 ints; None (the
            default) is `pool_size`.
        padding: `"valid"` (no padding) or `"same"` (pad so that every input entry is
            covered; padded entries are not counted in the mean).
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a malformed argument, or (when called) a window larger than the
            unpadded input.
    """

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(3, "average", pool_size, strides, padding, data_format, **kwargs)


@closed_form_output_shape
class BaseGlobalPooling(Layer):
    """Max or mean over all spatial axes: `(batch, *spatial, channels)` ->
    `(batch, channels)` (or `(batch, 1, ..., channels)` with `keepdims`)."""

    row_wise = True

    def __init__(self, rank, reduction, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.rank, self.reduction = rank, reduction
        self.data_format = standardize_data_format(data_format)
        self.keepdims = keepdims
        self.input_spec = InputSpec(ndim=rank + 2)
        self.built = True  # no weights

    def call(self, inputs):
        x = unwrap(inputs)
        first = 1 if self.data_format == "channels_last" else 2
        axes = tuple(range(first, first + self.rank))
        reduce = jnp.max if self.reduction == "max" else jnp.mean
        return reduce(x, axis=axes, keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        """`(batch, *spatial, channels)` -> `(batch, channels)`, or with `keepdims`
        the input's shape with each spatial size 1."""
        spatial = spatial_axes_of(self.rank, self.data_format)
        if len(input_shape) != self.rank + 2:
            raise ValueError(f"Expected an input of rank {self.rank + 2}, got shape "
                             f"{tuple(input_shape)}.")
        if self.keepdims:
            return tuple(1 if a in spatial else d for a, d in enumerate(input_shape))
        return tuple(d for a, d in enumerate(input_shape) if a not in spatial)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


@export("loopax.layers.GlobalAveragePooling1D", "loopax.layers.GlobalAvgPool1D")
class GlobalAveragePooling1D(BaseGlobalPooling):
    """Mean over steps: `(batch, steps, channels)` -> `(batch, channels)`.

    A `(batch, steps)` mask (from `Embedding(mask_zero=True)` or `Masking`) limits
    the mean to the unmasked steps.
    Output dtype = input dtype. With `keepdims=True` the pooled axes stay, with size 1.

    Args:
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        keepdims: Whether to keep the pooled axes (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    row_wise = True

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(1, "average", data_format, keepdims, **kwargs)

    def call(self, inputs, mask=None):
        """With a `(batch, steps)` mask, the mean over the unmasked steps only
        (the mask stops here, as in Keras)."""
        if mask is None:
            return super().call(inputs)
        x = unwrap(inputs)
        steps_axis = 1 if self.data_format == "channels_last" else 2
        keep = jnp.expand_dims(jnp.asarray(unwrap(mask), bool), 3 - steps_axis)
        total = jnp.sum(jnp.where(keep, x, 0), axis=steps_axis, keepdims=self.keepdims)
        return total / jnp.sum(keep.astype(x.dtype), axis=steps_axis, keepdims=self.keepdims)


@export("loopax.layers.GlobalAveragePooling2D", "loopax.layers.GlobalAvgPool2D")
class GlobalAveragePooling2D(BaseGlobalPooling):
    """Mean over positions: `(batch, h, w, channels)` -> `(batch, channels)`.

    Output dtype = input dtype. With `keepdims=True` the pooled axes stay, with size 1.

    Args:
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        keepdims: Whether to keep the pooled axes (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(2, "average", data_format, keepdims, **kwargs)


@export("loopax.layers.GlobalMaxPool1D", "loopax.layers.GlobalMaxPooling1D")
class GlobalMaxPooling1D(BaseGlobalPooling):
    """Max over steps: `(batch, steps, channels)` -> `(batch, channels)`.

    Output dtype = input dtype. With `keepdims=True` the pooled axes stay, with size 1.

    Args:
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        keepdims: Whether to keep the pooled axes (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(1, "max", data_format, keepdims, **kwargs)


@export("loopax.layers.GlobalMaxPool2D", "loopax.layers.GlobalMaxPooling2D")
class GlobalMaxPooling2D(BaseGlobalPooling):
    """Max over positions: `(batch, h, w, channels)` -> `(batch, channels)`.

    Output dtype = input dtype. With `keepdims=True` the pooled axes stay, with size 1.

    Args:
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        keepdims: Whether to keep the pooled axes (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(2, "max", data_format, keepdims, **kwargs)


@export("loopax.layers.GlobalAveragePooling3D", "loopax.layers.GlobalAvgPool3D")
class GlobalAveragePooling3D(BaseGlobalPooling):
    """Mean over positions: `(batch, d, h, w, channels)` -> `(batch, channels)`.

    Output dtype = input dtype. With `keepdims=True` the pooled axes stay, with size 1.

    Args:
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        keepdims: Whether to keep the pooled axes (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(3, "average", data_format, keepdims, **kwargs)


@export("loopax.layers.GlobalMaxPool3D", "loopax.layers.GlobalMaxPooling3D")
class GlobalMaxPooling3D(BaseGlobalPooling):
    """Max over positions: `(batch, d, h, w, channels)` -> `(batch, channels)`.

    Output dtype = input dtype. With `keepdims=True` the pooled axes stay, with size 1.

    Args:
        data_format: `"channels_last"` (`(batch, *spatial, channels)`) or
            `"channels_first"` (`(batch, channels, *spatial)`); None (the default) is
            `loopax.config.image_data_format()`.
        keepdims: Whether to keep the pooled axes (default False).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(3, "max", data_format, keepdims, **kwargs)


# Keras' short aliases.
MaxPool1D, MaxPool2D = MaxPooling1D, MaxPooling2D
AvgPool1D, AvgPool2D = AveragePooling1D, AveragePooling2D
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D
MaxPool3D, AvgPool3D = MaxPooling3D, AveragePooling3D
GlobalAvgPool3D, GlobalMaxPool3D = GlobalAveragePooling3D, GlobalMaxPooling3D
# Configs may name them by these aliases too (Keras's layer names).
serialization.register_builtins("layer", {
    "MaxPool1D": MaxPooling1D, "MaxPool2D": MaxPooling2D, "MaxPool3D": MaxPooling3D,
    "AvgPool1D": AveragePooling1D, "AvgPool2D": AveragePooling2D, "AvgPool3D": AveragePooling3D,
    "GlobalAvgPool1D": GlobalAveragePooling1D, "GlobalAvgPool2D": GlobalAveragePooling2D,
    "GlobalAvgPool3D": GlobalAveragePooling3D, "GlobalMaxPool1D": GlobalMaxPooling1D,
    "GlobalMaxPool2D": GlobalMaxPooling2D, "GlobalMaxPool3D": GlobalMaxPooling3D})
