"""Shape layers: UpSampling1D/2D/3D, ZeroPadding1D/2D/3D, Cropping1D/2D/3D,
RepeatVector, Permute.

All take channels-last input `(batch, *spatial, channels)` unless
`data_format="channels_first"` (the 1-D ones are channels-last only, as in Keras).
"""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.argument_checks import (
    positive_int,
    standardize_data_format,
    standardize_tuple,
)
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.symbolic import closed_form_output_shape
from loopax.src.ops.image import resize
from loopax.src.tensor import unwrap


def _spatial_axes(rank, data_format):
    return tuple(range(1, rank + 1)) if data_format == "channels_last" \
        else tuple(range(2, rank + 2))


def _pairs(value, rank, name, owner):
    """Per-axis (before, after) amounts: `1` -> ((1, 1),) * rank; `(1, 2)` ->
    ((1, 1), (2, 2)) (for rank 1: ((1, 2),)); `((1, 2), (3, 4))` as given."""
    def non_negative_int(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if non_negative_int(value):
        return ((value, value),) * rank
    value = tuple(value)
    if rank == 1 and len(value) == 2 and all(map(non_negative_int, value)):
        return (value,)
    if len(value) == rank and all(map(non_negative_int, value)):
        return tuple((v, v) for v in value)
    if len(value) == rank and all(
            isinstance(p, (tuple, list)) and len(p) == 2 and all(map(non_negative_int, p))
            for p in value):
        return tuple(tuple(p) for p in value)
    raise ValueError(f"{owner}: `{name}` must be an int, a tuple of {rank} ints or a tuple "
                     f"of {rank} (before, after) pairs of non-negative ints; got {value!r}.")


def _resize_spatial(layer, input_shape, resize_axis):
    """`input_shape` with each known spatial size `n` replaced by
    `resize_axis(n, before, after)` (the layer's `padding` or `cropping` pair)."""
    shape = list(input_shape)
    if len(shape) != layer.rank + 2:
        raise ValueError(f"{type(layer).__name__} {layer.name!r} expects an input of rank "
                         f"{layer.rank + 2}, got shape {tuple(shape)}.")
    pairs = getattr(layer, "padding", None) or layer.cropping
    for axis, (before, after) in zip(layer._axes, pairs):
        if shape[axis] is not None:
            shape[axis] = resize_axis(shape[axis], before, after)
    return tuple(shape)


class _SpatialLayer(Layer):
    """Base for layers acting on the spatial axes of a rank-`rank + 2` input."""

    def __init__(self, rank, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.rank = rank
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)
        self.built = True  # no weights

    @property
    def _axes(self):
        return _spatial_axes(self.rank, self.data_format)

    def get_config(self):
        config = super().get_config()
        if self.rank > 1:
            config["data_format"] = self.data_format
        return config


class _UpSampling(_SpatialLayer):
    """Repeats each spatial entry `size` times along its axis."""

    row_wise = True

    def __init__(self, rank, size, data_format=None, **kwargs):
        super().__init__(rank, data_format, **kwargs)
        self.size = standardize_tuple(size, rank, "size", type(self).__name__)

    def call(self, inputs):
        x = unwrap(inputs)
        for axis, size in zip(self._axes, self.size):
            if size > 1:
                x = jnp.repeat(x, size, axis=axis)
        return x

    def get_config(self):
        return {**super().get_config(), "size": self.size}


@export("loopax.layers.UpSampling1D")
class UpSampling1D(_UpSampling):
    """`(batch, steps, features)` -> `(batch, steps · size, features)`.

    Each step is repeated `size` times.

    Args:
        size: The repeat count, a positive int (default 2).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `size` is not a positive int.
    """

    def __init__(self, size=2, **kwargs):
        super().__init__(1, positive_int(size, "size", "UpSampling1D"), **kwargs)

    def get_config(self):
        return {**super().get_config(), "size": self.size[0]}


@export("loopax.layers.UpSampling2D")
class UpSampling2D(_UpSampling):
    """`(batch, h, w, c)` -> `(batch, h · size[0], w · size[1], c)` by
    repetition ("nearest") or by `loopax.ops.image.resize` with the other
    `interpolation` methods ("bilinear", "bicubic", "lanczos3", "lanczos5").

    Args:
        size: The factors for rows and columns, an int or a pair (default `(2, 2)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        interpolation: `"nearest"` (the default), `"bilinear"`, `"bicubic"`,
            `"lanczos3"` or `"lanczos5"`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: an unknown `interpolation`, or a malformed `size`.
    """

    row_wise = True

    _interpolations = ("nearest", "bilinear", "bicubic", "lanczos3", "lanczos5")

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(2, size, data_format, **kwargs)
        if interpolation not in self._interpolations:
            raise ValueError(f"UpSampling2D: `interpolation` must be one of "
                             f"{self._interpolations}, got {interpolation!r}.")
        self.interpolation = interpolation

    def call(self, inputs):
        if self.interpolation == "nearest":
            return super().call(inputs)
        x = unwrap(inputs)
        height, width = (x.shape[a] * s for a, s in zip(self._axes, self.size))
        return resize(x, (height, width), interpolation=self.interpolation,
                      data_format=self.data_format)

    def get_config(self):
        return {**super().get_config(), "interpolation": self.interpolation}


@export("loopax.layers.UpSampling3D")
class UpSampling3D(_UpSampling):
    """`(batch, d, h, w, c)` -> `(batch, d · s0, h · s1, w · s2, c)`.

    Each entry is repeated `size[i]` times along spatial axis i.

    Args:
        size: The factors `(s0, s1, s2)`, or one int for all (default `(2, 2, 2)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(3, size, data_format, **kwargs)


@closed_form_output_shape
class _ZeroPadding(_SpatialLayer):
    """Pads the spatial axes with zeros."""

    row_wise = True

    def __init__(self, rank, padding, data_format=None, **kwargs):
        super().__init__(rank, data_format, **kwargs)
        self.padding = _pairs(padding, rank, "padding", type(self).__name__)

    def call(self, inputs):
        x = unwrap(inputs)
        widths = [(0, 0)] * x.ndim
        for axis, pair in zip(self._axes, self.padding):
            widths[axis] = pair
        return jnp.pad(x, widths)

    def compute_output_shape(self, input_shape):
        """Each spatial size grows by its (before, after) padding; None stays None."""
        return _resize_spatial(self, input_shape, lambda n, before, after: n + before + after)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding}


@export("loopax.layers.ZeroPadding1D")
class ZeroPadding1D(_ZeroPadding):
    """`(batch, steps, c)` -> `(batch, before + steps + after, c)`; `padding`
    an int or `(before, after)`.

    Args:
        padding: An int (both ends) or `(before, after)` (default 1).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `padding` is not of one of these forms, or is negative.
    """

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(1, padding, data_format, **kwargs)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding[0],
                "data_format": self.data_format}


@export("loopax.layers.ZeroPadding2D")
class ZeroPadding2D(_ZeroPadding):
    """Pads rows and columns: `padding` an int, `(rows, cols)` or
    `((top, bottom), (left, right))`.

    `(batch, h, w, c)` -> `(batch, top + h + bottom, left + w + right, c)`.

    Args:
        padding: An int (every side), `(rows, cols)` (symmetric) or
            `((top, bottom), (left, right))` (default `(1, 1)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `padding` is not of one of these forms, or is negative.
    """

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(2, padding, data_format, **kwargs)


@export("loopax.layers.ZeroPadding3D")
class ZeroPadding3D(_ZeroPadding):
    """Pads depth, rows and columns: an int, 3 ints or 3 (before, after) pairs.

    `(batch, d, h, w, c)` -> `(batch, d + pads, h + pads, w + pads, c)`.

    Args:
        padding: An int (every side), 3 ints (symmetric per axis) or 3
            `(before, after)` pairs (default 1 on every side).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `padding` is not of one of these forms, or is negative.
    """

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(3, padding, data_format, **kwargs)


@closed_form_output_shape
class _Cropping(_SpatialLayer):
    """Removes entries from both ends of the spatial axes."""

    row_wise = True

    def __init__(self, rank, cropping, data_format=None, **kwargs):
        super().__init__(rank, data_format, **kwargs)
        self.cropping = _pairs(cropping, rank, "cropping", type(self).__name__)

    def call(self, inputs):
        x = unwrap(inputs)
        index = [slice(None)] * x.ndim
        for axis, (before, after) in zip(self._axes, self.cropping):
            if before + after >= x.shape[axis]:
                raise ValueError(
                    f"{type(self).__name__} {self.name!r}: cropping {self.cropping} leaves "
                    f"nothing of input axis {axis} (size {x.shape[axis]}); input shape "
                    f"{tuple(x.shape)}. Crop less than the axis size.")
            index[axis] = slice(before, x.shape[axis] - after)
        return x[tuple(index)]

    def compute_output_shape(self, input_shape):
        """Each spatial size shrinks by its (before, after) cropping; None stays None."""
        def crop(n, before, after):
            if before + after >= n:
                raise ValueError(f"{type(self).__name__} {self.name!r}: cropping "
                                 f"{self.cropping} leaves nothing of input shape "
                                 f"{tuple(input_shape)}.")
            return n - before - after
        return _resize_spatial(self, input_shape, crop)

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}


@export("loopax.layers.Cropping1D")
class Cropping1D(_Cropping):
    """`(batch, steps, c)` -> `(batch, steps - before - after, c)`.

    Args:
        cropping: An int (both ends) or `(before, after)` (default `(1, 1)`).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `cropping` is not of one of these forms or is negative, or (when
            called) it removes a whole axis.
    """

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(1, cropping, **kwargs)

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping[0]}


@export("loopax.layers.Cropping2D")
class Cropping2D(_Cropping):
    """Crops rows and columns: an int, `(rows, cols)` or `((top, bottom), (left, right))`.

    `(batch, h, w, c)` -> `(batch, h - top - bottom, w - left - right, c)`.

    Args:
        cropping: An int (every side), `(rows, cols)` (symmetric) or
            `((top, bottom), (left, right))` (default: no cropping).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `cropping` is not of one of these forms or is negative, or (when
            called) it removes a whole axis.
    """

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(2, cropping, data_format, **kwargs)


@export("loopax.layers.Cropping3D")
class Cropping3D(_Cropping):
    """Crops depth, rows and columns: an int, 3 ints or 3 (before, after) pairs.

    `(batch, d, h, w, c)` -> each spatial size less its two croppings.

    Args:
        cropping: An int (every side), 3 ints (symmetric per axis) or 3
            `(before, after)` pairs (default 1 on every side).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `cropping` is not of one of these forms or is negative, or (when
            called) it removes a whole axis.
    """

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(3, cropping, data_format, **kwargs)


@export("loopax.layers.RepeatVector")
class RepeatVector(Layer):
    """`(batch, features)` -> `(batch, n, features)`.

    Args:
        n: The repeat count, a positive int.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `n` is not a positive int.
    """

    row_wise = True

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = positive_int(n, "n", "RepeatVector")
        self.input_spec = InputSpec(ndim=2)
        self.built = True

    def call(self, inputs):
        x = unwrap(inputs)
        return jnp.broadcast_to(x[:, None, :], (x.shape[0], self.n, x.shape[1]))

    def get_config(self):
        return {**super().get_config(), "n": self.n}


@export("loopax.layers.Permute")
class Permute(Layer):
    """Reorders the non-batch axes: `dims` is a permutation of 1..rank-1,
    e.g. `Permute((2, 1))`: `(batch, a, b)` -> `(batch, b, a)`.

    Args:
        dims: The new order of axes 1..rank-1 (1-based; the batch axis stays first).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `dims` is not a permutation of 1..len(dims).
    """

    row_wise = True

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Permute: `dims` must be a permutation of 1..{len(self.dims)} "
                             f"(the batch axis 0 stays first), got {dims!r}.")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)
        self.built = True

    def call(self, inputs):
        return jnp.transpose(unwrap(inputs), (0,) + self.dims)

    def get_config(self):
        return {**super().get_config(), "dims": self.dims}
