"""Image ops (`keras.ops.image`): resizing, cropping and affine warps.

Images are `(batch, height, width, channels)` or one image `(height, width,
channels)` with `data_format="channels_last"` (the default, unless
`loopax.config.set_image_data_format` changed it), or channels
first `(batch, channels, height, width)` / `(channels, height, width)`.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp

from loopax.src.array_types import Array, ArrayLike
from loopax.src.config import image_data_format
from loopax.src.ops.utils import as_array
from loopax.src.tensor import op

_IMPORTED = set(globals())

RESIZE_INTERPOLATIONS = ("bilinear", "nearest", "lanczos3", "lanczos5", "bicubic")


def _hw_axes(images, data_format, owner):
    """(height axis, width axis) of a rank-3 or rank-4 image array."""
    data_format = (data_format or image_data_format()).lower()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{owner}: `data_format` must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}.")
    if images.ndim not in (3, 4):
        raise ValueError(f"{owner}: `images` must have rank 3 (one image) or 4 (a batch); "
                         f"got shape {tuple(images.shape)}.")
    first = images.ndim - 3
    return (first, first + 1) if data_format == "channels_last" else (first + 1, first + 2)


def _crop(images, axes, top, left, height, width):
    index = [slice(None)] * images.ndim
    index[axes[0]] = slice(top, top + height)
    index[axes[1]] = slice(left, left + width)
    return images[tuple(index)]


@op
def resize(images: ArrayLike, size: Sequence[int], interpolation: str = "bilinear",
           antialias: bool = False, crop_to_aspect_ratio: bool = False,
           pad_to_aspect_ratio: bool = False, fill_mode: str = "constant",
           fill_value: ArrayLike = 0.0, data_format: str | None = None) -> Array:
    """Resizes images to `size = (height, width)` with `jax.image.resize`.

    `crop_to_aspect_ratio` first crops the largest centred box with the
    target's aspect ratio; `pad_to_aspect_ratio` instead pads (with
    `fill_value`) to it, so the content is not distorted.
    """
    images = as_array(images)
    axes = _hw_axes(images, data_format, "resize")
    if interpolation not in RESIZE_INTERPOLATIONS:
        raise ValueError(f"resize: `interpolation` must be one of {RESIZE_INTERPOLATIONS}, "
                         f"got {interpolation!r}.")
    if fill_mode != "constant":
        raise ValueError(f"resize: only fill_mode='constant' is supported, got {fill_mode!r}.")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("resize: pass at most one of `crop_to_aspect_ratio` and "
                         "`pad_to_aspect_ratio`.")
    if len(tuple(size)) != 2 or not all(isinstance(s, int) and s > 0 for s in size):
        raise ValueError(f"resize: `size` must be (height, width) of positive ints, "
                         f"got {size!r}.")
    target_h, target_w = size
    height, width = images.shape[axes[0]], images.shape[axes[1]]
    if crop_to_aspect_ratio:
        crop_h = max(min(height, int(width * target_h / target_w)), 1)
        crop_w = max(min(width, int(height * target_w / target_h)), 1)
        images = _crop(images, axes, int((height - crop_h) / 2), int((width - crop_w) / 2),
                       crop_h, crop_w)
    elif pad_to_aspect_ratio:
        pad_h = max(height, int(width * target_h / target_w))
        pad_w = max(width, int(height * target_w / target_h))
        widths = [(0, 0)] * images.ndim
        top, left = int((pad_h - height) / 2), int((pad_w - width) / 2)
        widths[axes[0]] = (top, top)
        widths[axes[1]] = (left, left)
        images = jnp.pad(images, widths, constant_values=fill_value)
    shape = list(images.shape)
    shape[axes[0]], shape[axes[1]] = target_h, target_w
    return jax.image.resize(images, tuple(shape), method=interpolation, antialias=antialias)


@op
def crop_images(images: ArrayLike, top_cropping: int | None = None,
                left_cropping: int | None = None, bottom_cropping: int | None = None,
                right_cropping: int | None = None, target_height: int | None = None,
                target_width: int | None = None, data_format: str | None = None) -> Array:
    """Crops a box: give the top and left offsets and either the target
    height/width or the bottom/right amounts to remove."""
    images = as_array(images)
    axes = _hw_axes(images, data_format, "crop_images")
    height, width = images.shape[axes[0]], images.shape[axes[1]]
    top, left = top_cropping or 0, left_cropping or 0

    def extent(size, start, target, end, names):
        if (target is None) == (end is None):
            raise ValueError(f"crop_images: give exactly one of `{names[0]}` and "
                             f"`{names[1]}`; got {target!r} and {end!r}.")
        extent = target if target is not None else size - start - end
        if start < 0 or extent <= 0 or start + extent > size:
            raise ValueError(f"crop_images: the crop ({names[0]}={extent}, offset {start}) "
                             f"does not fit in images of shape {tuple(images.shape)}.")
        return extent

    crop_h = extent(height, top, target_height, bottom_cropping,
                    ("target_height", "bottom_cropping"))
    crop_w = extent(width, left, target_width, right_cropping,
                    ("target_width", "right_cropping"))
    return _crop(images, axes, top, left, crop_h, crop_w)


AFFINE_INTERPOLATIONS = {"nearest": 0, "bilinear": 1}
FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


@op
def map_coordinates(inputs: ArrayLike, coordinates: ArrayLike, order: int,
                    fill_mode: str = "constant", fill_value: ArrayLike = 0.0) -> Array:
    """Samples `inputs` at the (fractional) `coordinates`, shaped
    `(inputs.ndim, *output_shape)`, with spline `order` 0 (nearest) or 1
    (linear); points outside are filled according to `fill_mode`."""
    inputs, coordinates = as_array(inputs), as_array(coordinates)
    if order not in (0, 1):
        raise ValueError(f"map_coordinates: `order` must be 0 or 1, got {order!r}.")
    if fill_mode not in FILL_MODES:
        raise ValueError(f"map_coordinates: `fill_mode` must be one of {FILL_MODES}, "
                         f"got {fill_mode!r}.")
    if coordinates.shape[0] != inputs.ndim:
        raise ValueError(f"map_coordinates: `coordinates` must have shape "
                         f"({inputs.ndim}, ...) for inputs of rank {inputs.ndim}; got "
                         f"{tuple(coordinates.shape)}.")
    return jax.scipy.ndimage.map_coordinates(inputs, list(coordinates), order=order,
                                             mode=fill_mode, cval=fill_value)


@op
def affine_transform(images: ArrayLike, transform: ArrayLike, interpolation: str = "bilinear",
                     fill_mode: str = "constant", fill_value: ArrayLike = 0,
                     data_format: str | None = None) -> Array:
    """Warps images by projective transforms `[a0, a1, a2, b0, b1, b2, c0, c1]`
    (shape `(8,)` or `(batch, 8)`): output pixel `(x, y)` reads the input at
    `((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)`, `k = c0 x + c1 y + 1`.

    `interpolation`: "nearest" or "bilinear"; `fill_mode` ("constant",
    "nearest", "wrap", "mirror", "reflect") says what is read outside.
    """
    images, transform = as_array(images), as_array(transform)
    axes = _hw_axes(images, data_format, "affine_transform")
    if interpolation not in AFFINE_INTERPOLATIONS:
        raise ValueError(f"affine_transform: `interpolation` must be one of "
                         f"{tuple(AFFINE_INTERPOLATIONS)}, got {interpolation!r}.")
    if fill_mode not in FILL_MODES:
        raise ValueError(f"affine_transform: `fill_mode` must be one of {FILL_MODES}, "
                         f"got {fill_mode!r}.")
    if transform.ndim not in (1, 2) or transform.shape[-1] != 8:
        raise ValueError(f"affine_transform: `transform` must have shape (8,) or "
                         f"(batch, 8); got {tuple(transform.shape)}.")
    single = images.ndim == 3
    batch = images[None] if single else images
    h_axis, w_axis = axes[0] + single, axes[1] + single
    channel_axis = ({1, 2, 3} - {h_axis, w_axis}).pop()
    batch = jnp.moveaxis(batch, (h_axis, w_axis, channel_axis), (1, 2, 3))  # (n, h, w, c)
    transform = jnp.broadcast_to(transform, (batch.shape[0], 8)).astype(batch.dtype)
    height, width = batch.shape[1], batch.shape[2]
    y, x = jnp.meshgrid(jnp.arange(height, dtype=batch.dtype),
                        jnp.arange(width, dtype=batch.dtype), indexing="ij")

    def warp_one(image, t):  # image (h, w, c), t (8,)
        k = t[6] * x + t[7] * y + 1
        x_in = (t[0] * x + t[1] * y + t[2]) / k
        y_in = (t[3] * x + t[4] * y + t[5]) / k
        sample = lambda channel: jax.scipy.ndimage.map_coordinates(  # noqa: E731
            channel, [y_in, x_in], order=AFFINE_INTERPOLATIONS[interpolation],
            mode=fill_mode, cval=fill_value)
        return jax.vmap(sample, in_axes=2, out_axes=2)(image)

    out = jax.vmap(warp_one)(batch, transform)
    out = jnp.moveaxis(out, (1, 2, 3), (h_axis, w_axis, channel_axis))
    return out[0] if single else out


__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_")
                 and n not in ("RESIZE_INTERPOLATIONS", "AFFINE_INTERPOLATIONS", "FILL_MODES"))
