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

from loopax.src import random as _random  # the seeding every random op shares
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
        sample = lambda channel: jax.scipy.ndimage.map_coordinates(
            channel, [y_in, x_in], order=AFFINE_INTERPOLATIONS[interpolation],
            mode=fill_mode, cval=fill_value)
        return jax.vmap(sample, in_axes=2, out_axes=2)(image)

    out = jax.vmap(warp_one)(batch, transform)
    out = jnp.moveaxis(out, (1, 2, 3), (h_axis, w_axis, channel_axis))
    return out[0] if single else out


@op
def perspective_transform(images: ArrayLike, start_points: ArrayLike, end_points: ArrayLike,
                          interpolation: str = "bilinear", fill_value: ArrayLike = 0,
                          data_format: str | None = None) -> Array:
    """Warps images so that the four `start_points` `(x, y)` land on the four
    `end_points` (shapes `(4, 2)`, or `(batch, 4, 2)` per image); what comes
    from outside the input is `fill_value`."""
    start, end = as_array(start_points), as_array(end_points)
    for name, points in (("start_points", start), ("end_points", end)):
        if points.ndim not in (2, 3) or points.shape[-2:] != (4, 2):
            raise ValueError(f"perspective_transform: `{name}` must have shape (4, 2) or "
                             f"(batch, 4, 2); got {tuple(points.shape)}.")
    if start.shape != end.shape:
        raise ValueError(f"perspective_transform: start_points {tuple(start.shape)} and "
                         f"end_points {tuple(end.shape)} must have the same shape.")
    transform = _homography(start.reshape(-1, 4, 2).astype(jnp.float32),
                            end.reshape(-1, 4, 2).astype(jnp.float32))
    return affine_transform(images, transform, interpolation, "constant", fill_value,
                            data_format)


def _homography(start, end):
    """`(batch, 8)` projective transforms taking each end point to its start
    point (the output-to-input map `affine_transform` reads)."""
    (sx, sy), (ex, ey) = jnp.moveaxis(start, -1, 0), jnp.moveaxis(end, -1, 0)
    zero, one = jnp.zeros_like(ex), jnp.ones_like(ex)
    x_rows = jnp.stack([ex, ey, one, zero, zero, zero, -sx * ex, -sx * ey], axis=-1)
    y_rows = jnp.stack([zero, zero, zero, ex, ey, one, -sy * ex, -sy * ey], axis=-1)
    system = jnp.concatenate([x_rows, y_rows], axis=1)  # (batch, 8, 8)
    targets = jnp.concatenate([sx, sy], axis=-1)[..., None]
    return jnp.linalg.solve(system, targets)[..., 0]


@op
def elastic_transform(images: ArrayLike, alpha=20.0, sigma=5.0, interpolation="bilinear",
                      fill_mode="reflect", fill_value=0.0, seed=None,
                      data_format: str | None = None) -> Array:
    """Elastic distortion (Simard et al. 2003): every pixel reads the input
    `alpha * (dx, dy)` away, where `dx`, `dy` are independent per-image normal
    noise times `sigma`, Gaussian-blurred with `sigma` (kernel `int(6 sigma) | 1`).

    `seed` is as for `loopax.random` functions; `fill_mode`/`fill_value` say what
    is read outside the image, as in `affine_transform`.
    """
    return _elastic_warp(images, alpha, sigma, int(6 * sigma) | 1, interpolation, fill_mode,
                         fill_value, seed, data_format)


def _elastic_warp(images, alpha, sigma, kernel_size, interpolation, fill_mode, fill_value,
                  seed, data_format):
    """`elastic_transform` with the blur's (odd) `kernel_size` given, so `alpha` and
    `sigma` may be traced values (RandomElasticTransform draws them)."""
    images = as_array(images)
    axes = _hw_axes(images, data_format, "elastic_transform")
    if interpolation not in AFFINE_INTERPOLATIONS:
        raise ValueError(f"elastic_transform: `interpolation` must be one of "
                         f"{tuple(AFFINE_INTERPOLATIONS)}, got {interpolation!r}.")
    if fill_mode not in FILL_MODES:
        raise ValueError(f"elastic_transform: `fill_mode` must be one of {FILL_MODES}, "
                         f"got {fill_mode!r}.")
    single = images.ndim == 3
    batch = images[None] if single else images
    h_axis, w_axis = axes[0] + single, axes[1] + single
    channel_axis = ({1, 2, 3} - {h_axis, w_axis}).pop()
    batch = jnp.moveaxis(batch, (h_axis, w_axis, channel_axis), (1, 2, 3))  # (n, h, w, c)
    n, height, width, _ = batch.shape
    dtype = batch.dtype if jnp.issubdtype(batch.dtype, jnp.floating) else jnp.float32
    noise = _random.normal((n, height, width, 2), dtype=dtype, seed=seed) * sigma
    shift = alpha * gaussian_blur(noise, (kernel_size, kernel_size), (sigma, sigma),
                                  "channels_last")
    y, x = jnp.meshgrid(jnp.arange(height, dtype=dtype), jnp.arange(width, dtype=dtype),
                        indexing="ij")

    def warp_one(image, offsets):  # (h, w, c), (h, w, 2)
        sample = lambda channel: jax.scipy.ndimage.map_coordinates(
            channel, [y + offsets[..., 1], x + offsets[..., 0]],
            order=AFFINE_INTERPOLATIONS[interpolation], mode=fill_mode, cval=fill_value)
        return jax.vmap(sample, in_axes=2, out_axes=2)(image)

    out = jax.vmap(warp_one)(batch.astype(dtype), shift).astype(batch.dtype)
    out = jnp.moveaxis(out, (1, 2, 3), (h_axis, w_axis, channel_axis))
    return out[0] if single else out

def _data_format(data_format, owner):
    data_format = (data_format or image_data_format()).lower()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{owner}: `data_format` must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}.")
    return data_format


def _tuple(value, rank, name, owner):
    """`value` (an int or a sequence of `rank` ints) as a tuple of `rank` ints."""
    values = (value,) * rank if isinstance(value, int) else tuple(value)
    if len(values) != rank or not all(isinstance(v, int) and v > 0 for v in values):
        raise ValueError(f"{owner}: `{name}` must be a positive int or {rank} positive ints, "
                         f"got {value!r}.")
    return values


def _patches(images, spatial_rank, size, strides, dilation_rate, padding, data_format, owner):
    """Every `size` window of `images` (rank `spatial_rank + 1` or `+ 2`), flattened
    in (window position..., channel) order into the channel axis."""
    images = as_array(images)
    data_format = _data_format(data_format, owner)
    if images.ndim not in (spatial_rank + 1, spatial_rank + 2):
        raise ValueError(f"{owner}: `images` must have rank {spatial_rank + 1} (unbatched) or "
                         f"{spatial_rank + 2} (a batch); got shape {tuple(images.shape)}.")
    if str(padding).lower() not in ("valid", "same"):
        raise ValueError(f"{owner}: `padding` must be 'valid' or 'same', got {padding!r}.")
    size = _tuple(size, spatial_rank, "size", owner)
    strides = size if strides is None else _tuple(strides, spatial_rank, "strides", owner)
    dilation = _tuple(dilation_rate, spatial_rank, "dilation_rate", owner)
    single = images.ndim == spatial_rank + 1
    batch = images[None] if single else images
    if data_format == "channels_last":
        batch = jnp.moveaxis(batch, -1, 1)
    channels = batch.shape[1]
    out = jax.lax.conv_general_dilated_patches(
        batch, size, strides, str(padding).upper(), rhs_dilation=dilation,
        precision=jax.lax.Precision.HIGHEST)  # (n, channels * prod(size), *positions)
    positions = out.shape[2:]
    out = out.reshape((out.shape[0], channels, -1) + positions)
    out = jnp.swapaxes(out, 1, 2).reshape((out.shape[0], -1) + positions)
    if data_format == "channels_last":
        out = jnp.moveaxis(out, 1, -1)
    return out[0] if single else out


@op
def extract_patches(images: ArrayLike, size, strides=None, dilation_rate=1, padding="valid",
                    data_format: str | None = None) -> Array:
    """Non-overlapping (or `strides`-spaced) patches of images, each flattened
    into the channel axis: `(n, h, w, c)` -> `(n, h', w', ph * pw * c)`.

    A `size` of three ints extracts 3-D patches from volumes, as
    `extract_patches_3d`. Entries are ordered (patch row, patch column, channel).
    """
    if not isinstance(size, int) and len(tuple(size)) == 3:
        return extract_patches_3d(images, size, strides, dilation_rate, padding, data_format)
    return _patches(images, 2, size, strides, dilation_rate, padding, data_format,
                    "extract_patches")


@op
def extract_patches_3d(volumes: ArrayLike, size, strides=None, dilation_rate=1,
                       padding="valid", data_format: str | None = None) -> Array:
    """3-D patches of volumes `(n, d, h, w, c)` -> `(n, d', h', w', pd * ph * pw * c)`."""
    return _patches(volumes, 3, size, strides, dilation_rate, padding, data_format,
                    "extract_patches_3d")


def _channel_axis(images, data_format, owner):
    _hw_axes(images, data_format, owner)  # checks the rank and data_format
    return -1 if _data_format(data_format, owner) == "channels_last" else -3


GRAYSCALE_WEIGHTS = (0.2989, 0.5870, 0.1140)  # ITU-R 601 luma, as tf.image


@op
def rgb_to_grayscale(images: ArrayLike, data_format: str | None = None) -> Array:
    """Luma `0.2989 r + 0.587 g + 0.114 b` with one channel, in the input's dtype
    (one-channel images come back as they are)."""
    images = as_array(images)
    axis = _channel_axis(images, data_format, "rgb_to_grayscale")
    if images.shape[axis] == 1:
        return images
    if images.shape[axis] != 3:
        raise ValueError(f"rgb_to_grayscale: images need 3 (RGB) or 1 channels on axis {axis}; "
                         f"got shape {tuple(images.shape)}.")
    compute = jnp.result_type(images.dtype, float)
    luma = jnp.tensordot(images.astype(compute), jnp.asarray(GRAYSCALE_WEIGHTS, compute),
                         axes=((axis,), (0,)))
    return jnp.expand_dims(luma, axis).astype(images.dtype)


def _float_planes(images, data_format, owner):
    images = as_array(images)
    axis = _channel_axis(images, data_format, owner)
    if not jnp.issubdtype(images.dtype, jnp.floating):
        raise ValueError(f"{owner}: images must be floats in [0, 1]; got {images.dtype} "
                         f"(cast them, e.g. images / 255).")
    if images.shape[axis] != 3:
        raise ValueError(f"{owner}: images need 3 channels on axis {axis}; got shape "
                         f"{tuple(images.shape)}.")
    return axis, [jnp.take(images, i, axis=axis) for i in range(3)]


@op
def rgb_to_hsv(images: ArrayLike, data_format: str | None = None) -> Array:
    """RGB in [0, 1] to hue, saturation, value in [0, 1] (hue 0 for grays)."""
    axis, (red, green, blue) = _float_planes(images, data_format, "rgb_to_hsv")
    eps = jnp.finfo(red.dtype).eps
    red, green, blue = (jnp.where(jnp.abs(c) < eps, 0.0, c) for c in (red, green, blue))
    value = jnp.maximum(jnp.maximum(red, green), blue)
    spread = value - jnp.minimum(jnp.minimum(red, green), blue)
    saturation = jnp.where(value > 0, spread / jnp.where(value > 0, value, 1.0), 0.0)
    sixth = 1.0 / (6.0 * jnp.where(spread > 0, spread, 1.0))
    hue = jnp.where(value == red, sixth * (green - blue),
                    jnp.where(value == green, sixth * (blue - red) + 1 / 3,
                              sixth * (red - green) + 2 / 3))
    hue = jnp.where(spread > 0, hue, 0.0)
    hue = hue + (hue < 0).astype(hue.dtype)
    return jnp.stack([hue, saturation, value], axis=axis)


@op
def hsv_to_rgb(images: ArrayLike, data_format: str | None = None) -> Array:
    """Hue, saturation, value in [0, 1] to RGB in [0, 1] (hue wraps around)."""
    axis, (hue, saturation, value) = _float_planes(images, data_format, "hsv_to_rgb")
    sector = jnp.mod(hue, 1.0) * 6.0

    def channel(distance):  # how much of a primary the hue holds, in [0, 1]
        return value * (1.0 - saturation + saturation * jnp.clip(distance, 0.0, 1.0))

    return jnp.stack([channel(jnp.abs(sector - 3.0) - 1.0),
                      channel(2.0 - jnp.abs(sector - 2.0)),
                      channel(2.0 - jnp.abs(sector - 4.0))], axis=axis)


@op
def pad_images(images: ArrayLike, top_padding: int | None = None,
               left_padding: int | None = None, bottom_padding: int | None = None,
               right_padding: int | None = None, target_height: int | None = None,
               target_width: int | None = None, data_format: str | None = None) -> Array:
    """Zero-pads images: give two of top/bottom padding and target height, and
    two of left/right padding and target width."""
    images = as_array(images)
    axes = _hw_axes(images, data_format, "pad_images")
    top, bottom = _padding_pair(images.shape[axes[0]], top_padding, bottom_padding,
                                target_height, ("top_padding", "bottom_padding",
                                                "target_height"))
    left, right = _padding_pair(images.shape[axes[1]], left_padding, right_padding,
                                target_width, ("left_padding", "right_padding", "target_width"))
    widths = [(0, 0)] * images.ndim
    widths[axes[0]], widths[axes[1]] = (top, bottom), (left, right)
    return jnp.pad(images, widths)


def _padding_pair(size, before, after, target, names):
    if [before, after, target].count(None) != 1:
        raise ValueError(f"pad_images: give exactly two of {', '.join(names)}; got "
                         f"{names[0]}={before}, {names[1]}={after}, {names[2]}={target}.")
    before = target - after - size if before is None else before
    after = target - before - size if after is None else after
    for name, amount in zip(names, (before, after)):
        if amount < 0:
            raise ValueError(f"pad_images: {name} would be {amount}; the images are {size} "
                             f"along that axis, more than {names[2]}={target}.")
    return before, after


def _depthwise(images, kernel, data_format, owner, padding="SAME"):
    """Convolves every channel of rank-3/4 `images` with the 2-D `kernel`."""
    images = as_array(images)
    axes = _hw_axes(images, data_format, owner)
    single = images.ndim == 3
    batch = images[None] if single else images
    channels_last = axes[1] == images.ndim - 2
    if channels_last:
        batch = jnp.moveaxis(batch, -1, 1)
    channels = batch.shape[1]
    kernel = jnp.tile(jnp.asarray(kernel, batch.dtype)[None, None], (channels, 1, 1, 1))
    out = jax.lax.conv_general_dilated(batch, kernel, (1, 1), padding,
                                       feature_group_count=channels,
                                       precision=jax.lax.Precision.HIGHEST)
    if channels_last:
        out = jnp.moveaxis(out, 1, -1)
    return out[0] if single else out


def _gaussian_1d(size, sigma, dtype):
    offsets = jnp.arange(size, dtype=dtype) - (size - 1) / 2
    weights = jnp.exp(-0.5 * (offsets / sigma) ** 2)
    return weights / weights.sum()


@op
def gaussian_blur(images: ArrayLike, kernel_size=(3, 3), sigma=(1.0, 1.0),
                  data_format: str | None = None) -> Array:
    """Blurs each channel with a normalized Gaussian kernel (zero padding, same size).

    As Keras 3.15, `kernel_size[0]` and `sigma[0]` apply along the width and
    `kernel_size[1]`, `sigma[1]` along the height.
    """
    images = as_array(images)
    width_size, height_size = _tuple(kernel_size, 2, "kernel_size", "gaussian_blur")
    sigma_w, sigma_h = (sigma, sigma) if isinstance(sigma, (int, float)) else tuple(sigma)
    dtype = images.dtype if jnp.issubdtype(images.dtype, jnp.floating) else jnp.float32
    kernel = jnp.outer(_gaussian_1d(height_size, sigma_h, dtype),
                       _gaussian_1d(width_size, sigma_w, dtype))
    return _depthwise(images.astype(dtype), kernel, data_format, "gaussian_blur")


SOBEL_ROWS = ((-1, -2, -1), (0, 0, 0), (1, 2, 1))  # d/dy; its transpose is d/dx


@op
def sobel_edges(images: ArrayLike, data_format: str | None = None) -> Array:
    """Sobel gradients of each channel (zero padding): the images' shape plus a
    last axis `[d/dy, d/dx]`."""
    rows = jnp.asarray(SOBEL_ROWS, jnp.float32)
    return jnp.stack([_depthwise(images, rows, data_format, "sobel_edges"),
                      _depthwise(images, rows.T, data_format, "sobel_edges")], axis=-1)


@op
def ssim(image1: ArrayLike, image2: ArrayLike, max_val=1.0, filter_size=11, filter_sigma=1.5,
         k1=0.01, k2=0.03, data_format: str | None = None) -> Array:
    """Structural similarity of two images (Wang et al. 2004) with a Gaussian
    window (valid positions only), averaged over positions and channels: `(batch,)`
    or a scalar for single images."""
    image1, image2 = as_array(image1), as_array(image2)
    if image1.shape != image2.shape:
        raise ValueError(f"ssim: image1 and image2 must have the same shape; got "
                         f"{tuple(image1.shape)} and {tuple(image2.shape)}.")
    axes = _hw_axes(image1, data_format, "ssim")
    if min(image1.shape[axes[0]], image1.shape[axes[1]]) < filter_size:
        raise ValueError(f"ssim: the images ({image1.shape[axes[0]]}, {image1.shape[axes[1]]}) "
                         f"are smaller than the window filter_size={filter_size}; pass a "
                         f"smaller filter_size.")
    compute = jnp.result_type(image1.dtype, float)
    x, y = image1.astype(compute), image2.astype(compute)
    window = _gaussian_1d(filter_size, filter_sigma, compute)
    window = jnp.outer(window, window)

    def local_mean(values):
        return _depthwise(values, window, data_format, "ssim", padding="VALID")

    mean_x, mean_y = local_mean(x), local_mean(y)
    var_x = local_mean(x * x) - mean_x ** 2
    var_y = local_mean(y * y) - mean_y ** 2
    cov = local_mean(x * y) - mean_x * mean_y
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    similarity = ((2 * mean_x * mean_y + c1) * (2 * cov + c2)
                  / ((mean_x ** 2 + mean_y ** 2 + c1) * (var_x + var_y + c2)))
    return similarity.mean(axis=(-3, -2, -1)).astype(image1.dtype)


SCALE_AND_TRANSLATE_METHODS = ("linear", "bilinear", "trilinear", "cubic", "bicubic",
                               "tricubic", "lanczos3", "lanczos5")


@op
def scale_and_translate(images: ArrayLike, output_shape, scale, translation, spatial_dims,
                        method, antialias=True) -> Array:
    """`jax.image.scale_and_translate`: resamples `spatial_dims` of `images` to
    `output_shape`, mapping input position `x` to `x * scale + translation`."""
    if method not in SCALE_AND_TRANSLATE_METHODS:
        raise ValueError(f"scale_and_translate: `method` must be one of "
                         f"{SCALE_AND_TRANSLATE_METHODS}, got {method!r}.")
    return jax.image.scale_and_translate(as_array(images), tuple(output_shape),
                                         tuple(spatial_dims), as_array(scale),
                                         as_array(translation), method, antialias)

__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_")
                 and not n.isupper())
