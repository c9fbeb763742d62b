"""`tf.image`: TensorFlow's image ops, with its signatures and numbers, on
`loopax.ops.image` and `jax.numpy`.

Images are `(height, width, channels)` or a batch `(n, height, width,
channels)` (TensorFlow's layout). As in TensorFlow, the `adjust_*` ops
compute in float32 (integer images are first scaled to [0, 1] by
`convert_image_dtype`) and convert back to the input's dtype, saturating;
`resize` returns float32 except with `method="nearest"`.

Random ops: `random_*` draw from `tf.random`'s generators (`seed=` an int op
seed, as `tf.random.uniform`); `stateless_random_*` take `seed=` a pair of
ints and give the same result for the same pair. Both have TensorFlow's
distributions, shapes and ranges, but not its bit streams (another
generator): the same seed gives different numbers than TensorFlow.

`decode_png/jpeg/image` and `encode_png/jpeg` run on the host with Pillow
(bytes in, bytes out: loopax has no string tensors).
"""

from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import random as loopax_random
from loopax.src.ops import image as ops_image
from loopax.src.state import Variable
from loopax.src.tf_compat import dtypes, stateless_random
from loopax.src.tf_compat import random as tf_random
from loopax.src.tf_compat.tensors import Tensor, as_tensor, document, static_ints, tf_op


class ResizeMethod:
    """The `method=` names of `tf.image.resize`."""
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


_RESIZE_METHODS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5")


# ---- helpers ---------------------------------------------------------------------------

def _array(image, owner, ranks=(3, 4)):
    if isinstance(image, (Tensor, Variable)):
        image = image.value
    image = jnp.asarray(image)
    if image.ndim not in ranks:
        raise ValueError(
            f"tf.image.{owner}: `image` must be (height, width, channels) or a batch "
            f"(n, height, width, channels); got shape {tuple(image.shape)}.")
    return image


def _is_float(dtype):
    return jnp.issubdtype(dtype, jnp.floating)


def _convert(image, dtype, saturate=False):
    """TensorFlow's convert_image_dtype on arrays: floats in [0, 1] <-> integers
    scaled to their range."""
    dtype = dtypes.storage_dtype(dtype)
    src = image.dtype
    if src == dtype:
        return image
    if _is_float(src) and _is_float(dtype):
        return image.astype(dtype)
    if not _is_float(src) and not _is_float(dtype):
        in_max, out_max = int(jnp.iinfo(src).max), int(jnp.iinfo(dtype).max)
        if in_max > out_max:
            scaled = image // ((in_max + 1) // (out_max + 1))
            if saturate:
                info = jnp.iinfo(dtype)
                scaled = jnp.clip(scaled, info.min, info.max)
            return scaled.astype(dtype)
        cast = image
        if saturate:
            info = jnp.iinfo(dtype)
            cast = jnp.clip(image, max(info.min, int(jnp.iinfo(src).min)), info.max)
        return cast.astype(dtype) * ((out_max + 1) // (in_max + 1))
    if not _is_float(src):  # integer -> float
        return image.astype(dtype) * (1.0 / float(jnp.iinfo(src).max))
    info = jnp.iinfo(dtype)  # float -> integer
    scaled = image * (float(info.max) + 0.5)
    if saturate:
        scaled = jnp.clip(scaled, float(info.min), float(info.max))
    return scaled.astype(dtype)


def _float_image(image):
    return image if image.dtype in (jnp.float16, jnp.float32) else _convert(image, jnp.float32)


def _back(result, dtype):
    return _convert(result, dtype, saturate=True)


def _hw(image):
    return image.shape[-3], image.shape[-2]


def _stateless_key(seed, owner):
    return stateless_random.key(seed, f"tf.image.{owner}")


def _stateful_key(seed):
    return loopax_random.draw_key(tf_random._seed(seed))


# ---- dtype and layout ------------------------------------------------------------------

def convert_image_dtype(image, dtype, saturate=False, name=None):
    """`image` in another dtype, rescaled: floats are in [0, 1], integers span
    [0, MAX] (float -> int multiplies by MAX + 0.5 and truncates)."""
    return as_tensor(_convert(_array(image, "convert_image_dtype", (2, 3, 4)), dtype, saturate))


@tf_op
def flip_left_right(image):
    """Mirrors each image horizontally (reverses the width axis)."""
    return jnp.flip(_array(image, "flip_left_right"), axis=-2)


@tf_op
def flip_up_down(image):
    """Mirrors each image vertically (reverses the height axis)."""
    return jnp.flip(_array(image, "flip_up_down"), axis=-3)


@tf_op
def transpose(image, name=None):
    """Swaps height and width."""
    return jnp.swapaxes(_array(image, "transpose"), -3, -2)


@tf_op
def rot90(image, k=1, name=None):
    """Rotates each image counter-clockwise by `k` quarter turns."""
    image = _array(image, "rot90")
    return jnp.rot90(image, int(k), axes=(image.ndim - 3, image.ndim - 2))


# ---- color -----------------------------------------------------------------------------

@tf_op
def rgb_to_grayscale(images, name=None):
    """Luma `0.2989 r + 0.587 g + 0.114 b` (one channel), in the input's dtype."""
    images = _array(images, "rgb_to_grayscale", (3, 4))
    if images.shape[-1] != 3:
        raise ValueError(f"tf.image.rgb_to_grayscale: images need 3 channels (RGB) on the last "
                         f"axis; got shape {tuple(images.shape)}.")
    gray = ops_image.rgb_to_grayscale(_convert(images, jnp.float32), data_format="channels_last")
    return _convert(gray, images.dtype)


@tf_op
def grayscale_to_rgb(images, name=None):
    """One-channel images repeated into 3 (RGB) channels."""
    images = jnp.asarray(images.value if isinstance(images, (Tensor, Variable)) else images)
    if images.ndim < 2 or images.shape[-1] != 1:
        raise ValueError(f"tf.image.grayscale_to_rgb: images need 1 channel on the last axis; "
                         f"got shape {tuple(images.shape)}.")
    return jnp.concatenate([images] * 3, axis=-1)


def _hsv_op(images, owner, forward):
    images = _array(images, owner, (3, 4))
    if not _is_float(images.dtype):
        raise ValueError(f"tf.image.{owner}: images must be floats in [0, 1]; got "
                         f"{images.dtype} (use tf.image.convert_image_dtype first).")
    fn = ops_image.rgb_to_hsv if forward else ops_image.hsv_to_rgb
    return fn(images, data_format="channels_last")


@tf_op
def rgb_to_hsv(images, name=None):
    """RGB in [0, 1] to hue, saturation, value in [0, 1]."""
    return _hsv_op(images, "rgb_to_hsv", True)


@tf_op
def hsv_to_rgb(images, name=None):
    """Hue, saturation, value in [0, 1] to RGB in [0, 1]."""
    return _hsv_op(images, "hsv_to_rgb", False)


_YUV = np.array([[0.299, -0.14714119, 0.61497538],
                 [0.587, -0.28886916, -0.51496512],
                 [0.114, 0.43601035, -0.10001026]], np.float32)
_YIQ = np.array([[0.299, 0.59590059, 0.2115],
                 [0.587, -0.27455667, -0.52273617],
                 [0.114, -0.32134392, 0.31119955]], np.float32)
# TensorFlow's YIQ -> RGB matrix is the standard (rounded) one, not the exact inverse.
_YIQ_INVERSE = np.array([[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
                         [0.6208248, -0.64720424, 1.70423049]], np.float32)


@tf_op
def rgb_to_yuv(images):
    """RGB in [0, 1] to YUV (TensorFlow's matrix)."""
    images = _float_image(_array(images, "rgb_to_yuv"))
    return images @ jnp.asarray(_YUV, images.dtype)


@tf_op
def yuv_to_rgb(images):
    """YUV to RGB (the inverse of `rgb_to_yuv`)."""
    images = _float_image(_array(images, "yuv_to_rgb"))
    return images @ jnp.asarray(np.linalg.inv(_YUV), images.dtype)


@tf_op
def rgb_to_yiq(images):
    """RGB in [0, 1] to YIQ (TensorFlow's matrix)."""
    images = _float_image(_array(images, "rgb_to_yiq"))
    return images @ jnp.asarray(_YIQ, images.dtype)


@tf_op
def yiq_to_rgb(images):
    """YIQ to RGB (the inverse of `rgb_to_yiq`)."""
    images = _float_image(_array(images, "yiq_to_rgb"))
    return images @ jnp.asarray(_YIQ_INVERSE, images.dtype)


# ---- adjustments -----------------------------------------------------------------------

def _adjust_brightness(image, delta):
    flt = _float_image(image)
    return _back(flt + jnp.asarray(delta, flt.dtype), image.dtype)


def _adjust_contrast(images, factor):
    flt = _float_image(images)
    mean = jnp.mean(flt, axis=(-3, -2), keepdims=True)
    return _back((flt - mean) * jnp.asarray(factor, flt.dtype) + mean, images.dtype)


def _adjust_saturation(image, factor):
    flt = _float_image(image).astype(jnp.float32)
    hsv = ops_image.rgb_to_hsv(flt, data_format="channels_last")
    saturation = jnp.clip(hsv[..., 1] * jnp.asarray(factor, jnp.float32), 0.0, 1.0)
    rgb = ops_image.hsv_to_rgb(hsv.at[..., 1].set(saturation), data_format="channels_last")
    return _back(rgb, image.dtype)


def _adjust_hue(image, delta):
    flt = _float_image(image).astype(jnp.float32)
    hsv = ops_image.rgb_to_hsv(flt, data_format="channels_last")
    hue = jnp.mod(hsv[..., 0] + jnp.asarray(delta, jnp.float32), 1.0)
    rgb = ops_image.hsv_to_rgb(hsv.at[..., 0].set(hue), data_format="channels_last")
    return _back(rgb, image.dtype)


def _rgb(image, owner):
    image = _array(image, owner)
    if image.shape[-1] != 3:
        raise ValueError(f"tf.image.{owner}: images need 3 channels (RGB) on the last axis; "
                         f"got shape {tuple(image.shape)}.")
    return image


@tf_op
def adjust_brightness(image, delta):
    """`image + delta` (in float, [0, 1] scale), back in the input's dtype."""
    return _adjust_brightness(_array(image, "adjust_brightness"), delta)


@tf_op
def adjust_contrast(images, contrast_factor):
    """`(x - mean) * contrast_factor + mean`, the mean per image and channel."""
    return _adjust_contrast(_array(images, "adjust_contrast"), contrast_factor)


@tf_op
def adjust_saturation(image, saturation_factor, name=None):
    """Saturation (in HSV) multiplied by `saturation_factor`, clipped to [0, 1]."""
    return _adjust_saturation(_rgb(image, "adjust_saturation"), saturation_factor)


@tf_op
def adjust_hue(image, delta, name=None):
    """Hue (in HSV, a fraction of the color circle) shifted by `delta` in [-1, 1]."""
    if not -1.0 <= float(delta) <= 1.0:
        raise ValueError(f"tf.image.adjust_hue: delta must be in [-1, 1]; got {delta}.")
    return _adjust_hue(_rgb(image, "adjust_hue"), delta)


@tf_op
def adjust_gamma(image, gamma=1, gain=1):
    """`gain * image ** gamma` (in float, [0, 1] scale), back in the input's dtype."""
    if float(gamma) < 0:
        raise ValueError(f"tf.image.adjust_gamma: gamma must be non-negative; got {gamma}.")
    image = _array(image, "adjust_gamma", (2, 3, 4))
    flt = _float_image(image)
    return _back(gain * flt ** gamma, image.dtype)


@tf_op
def per_image_standardization(image):
    """Each image scaled to mean 0 and variance 1 (the deviation at least
    1/sqrt(pixels)), in float32."""
    image = _array(image, "per_image_standardization").astype(jnp.float32)
    pixels = image.shape[-1] * image.shape[-2] * image.shape[-3]
    mean = jnp.mean(image, axis=(-3, -2, -1), keepdims=True)
    std = jnp.std(image, axis=(-3, -2, -1), keepdims=True)
    return (image - mean) / jnp.maximum(std, 1.0 / np.sqrt(pixels))


# ---- crops, pads, resizes --------------------------------------------------------------

def _ints(*values, owner):
    try:
        return [int(np.asarray(v.value if isinstance(v, (Tensor, Variable)) else v))
                for v in values]
    except jax.errors.ConcretizationTypeError:
        raise TypeError(f"tf.image.{owner}: sizes and offsets must be known when the "
                        "function is compiled (XLA needs static shapes).") from None


def _crop_box(image, top, left, height, width, owner):
    h, w = _hw(image)
    if top < 0 or left < 0 or height <= 0 or width <= 0 or top + height > h \
            or left + width > w:
        raise ValueError(f"tf.image.{owner}: the box (offset {top}, {left}, size {height}, "
                         f"{width}) does not fit in images of height {h} and width {w}.")
    return image[..., top:top + height, left:left + width, :]


def _pad_box(image, top, left, height, width, owner):
    h, w = _hw(image)
    bottom, right = height - top - h, width - left - w
    if top < 0 or left < 0 or bottom < 0 or right < 0:
        raise ValueError(f"tf.image.{owner}: images of height {h} and width {w} at offset "
                         f"({top}, {left}) do not fit in a target of {height} x {width}.")
    widths = [(0, 0)] * (image.ndim - 3) + [(top, bottom), (left, right), (0, 0)]
    return jnp.pad(image, widths)


@tf_op
def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The box `[offset_height : +target_height, offset_width : +target_width]`."""
    values = _ints(offset_height, offset_width, target_height, target_width,
                   owner="crop_to_bounding_box")
    return _crop_box(_array(image, "crop_to_bounding_box"), *values, "crop_to_bounding_box")


@tf_op
def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """Zero-pads to `target_height x target_width`, the image at the offsets."""
    values = _ints(offset_height, offset_width, target_height, target_width,
                   owner="pad_to_bounding_box")
    return _pad_box(_array(image, "pad_to_bounding_box"), *values, "pad_to_bounding_box")


@tf_op
def central_crop(image, central_fraction):
    """The central `central_fraction` (in (0, 1]) of each image's height and width."""
    image = _array(image, "central_crop")
    fraction = float(np.asarray(central_fraction))
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"tf.image.central_crop: central_fraction must be in (0, 1]; got "
                         f"{central_fraction}.")
    if fraction == 1.0:
        return image
    h, w = _hw(image)
    top, left = int((h - h * fraction) / 2), int((w - w * fraction) / 2)
    return image[..., top:h - top, left:w - left, :]


@tf_op
def resize_with_crop_or_pad(image, target_height, target_width):
    """Centre-crops or zero-pads each image to `target_height x target_width`."""
    image = _array(image, "resize_with_crop_or_pad")
    target_h, target_w = _ints(target_height, target_width, owner="resize_with_crop_or_pad")
    h, w = _hw(image)
    crop_top, crop_left = max((h - target_h) // 2, 0), max((w - target_w) // 2, 0)
    image = _crop_box(image, crop_top, crop_left, min(h, target_h), min(w, target_w),
                      "resize_with_crop_or_pad")
    h, w = _hw(image)
    return _pad_box(image, max((target_h - h) // 2, 0), max((target_w - w) // 2, 0),
                    target_h, target_w, "resize_with_crop_or_pad")


def _area_weights(size_in, size_out):
    """(size_out, size_in): the share of each input pixel in each output pixel
    when the input is split into size_out equal boxes."""
    scale = size_in / size_out
    starts = np.arange(size_out)[:, None] * scale
    pixels = np.arange(size_in)[None, :]
    overlap = np.clip(np.minimum(starts + scale, pixels + 1) - np.maximum(starts, pixels), 0, None)
    return (overlap / scale).astype(np.float32)


def _bicubic_weights(size_in, size_out):
    """(size_out, size_in): TensorFlow's resize_bicubic at half-pixel centres:
    Keys cubic (a = -0.5) weights of the 4 nearest taps at the sub-pixel offset
    rounded to 1/1024 (TF's weight table; jax.image.resize differs by ~1e-4),
    taps outside the image dropped and the rest renormalised."""
    scale = size_in / size_out
    weights = np.zeros((size_out, size_in), np.float64)
    for out in range(size_out):
        centre = (out + 0.5) * scale - 0.5
        first = int(np.floor(centre))
        t = np.round((centre - first) * 1024) / 1024
        taps = {}
        for tap in range(-1, 3):
            d = abs(tap - t)
            w = (1.5 * d - 2.5) * d * d + 1 if d <= 1 else ((-0.5 * d + 2.5) * d - 4) * d + 2
            if 0 <= first + tap < size_in:
                taps[first + tap] = w
        total = sum(taps.values())
        for index, w in taps.items():
            weights[out, index] = w / total
    return weights.astype(np.float32)


def _separable(images, rows, cols):
    return jnp.einsum("...hwc,yh,xw->...yxc", images, rows, cols,
                      precision=jax.lax.Precision.HIGHEST)


def _resize(images, size, method, antialias, owner):
    method = getattr(method, "value", method)
    method = {"nearest_neighbor": "nearest"}.get(str(method).lower(), str(method).lower())
    if method not in _RESIZE_METHODS:
        raise ValueError(f"tf.image.{owner}: method={method!r} is not supported; use one of "
                         f"{_RESIZE_METHODS} (tf.image.ResizeMethod.*).")
    target_h, target_w = size
    if target_h <= 0 or target_w <= 0:
        raise ValueError(f"tf.image.{owner}: size must be positive; got {size}.")
    if method == "nearest":
        return ops_image.resize(images, (target_h, target_w), interpolation="nearest",
                                data_format="channels_last")
    images = images.astype(jnp.float32)
    h, w = _hw(images)
    if method == "area":
        return _separable(images, _area_weights(h, target_h), _area_weights(w, target_w))
    if method == "bicubic" and not antialias:
        return _separable(images, _bicubic_weights(h, target_h), _bicubic_weights(w, target_w))
    return ops_image.resize(images, (target_h, target_w), interpolation=method,
                            antialias=bool(antialias), data_format="channels_last")


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None):
    """Resizes images to `size = (height, width)` (half-pixel centres, as
    TensorFlow 2). float32 results except for `method="nearest"` (the input's
    dtype). `preserve_aspect_ratio=True` fits the image inside `size`."""
    images = _array(images, "resize")
    target_h, target_w = _ints(*static_ints(size, "tf.image.resize(size=)"), owner="resize")
    if preserve_aspect_ratio:
        h, w = _hw(images)
        scale = min(target_h / h, target_w / w)
        target_h, target_w = int(round(h * scale)), int(round(w * scale))
    return as_tensor(_resize(images, (target_h, target_w), method, antialias, "resize"))


def resize_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR,
                    antialias=False):
    """Resizes keeping the aspect ratio to fit `target_height x target_width`,
    then zero-pads (centred) to exactly that size."""
    image = _array(image, "resize_with_pad")
    target_h, target_w = _ints(target_height, target_width, owner="resize_with_pad")
    h, w = _hw(image)
    ratio = max(w / target_w, h / target_h)
    new_h, new_w = int(np.floor(h / ratio)), int(np.floor(w / ratio))
    top = max(0, int(np.floor((target_h - h / ratio) / 2)))
    left = max(0, int(np.floor((target_w - w / ratio) / 2)))
    resized = _resize(image, (new_h, new_w), method, antialias, "resize_with_pad")
    return as_tensor(_pad_box(resized, top, left, target_h, target_w, "resize_with_pad"))


# ---- random (stateful and stateless) ---------------------------------------------------

def _random_flip(image, key, axis, owner):
    image = _array(image, owner)
    if image.ndim == 3:
        return jnp.where(jax.random.uniform(key, ()) < 0.5, jnp.flip(image, axis), image)
    flips = jax.random.uniform(key, (image.shape[0], 1, 1, 1)) < 0.5
    return jnp.where(flips, jnp.flip(image, axis), image)


def _random_crop(value, size, key, owner):
    value = jnp.asarray(value.value if isinstance(value, (Tensor, Variable)) else value)
    size = static_ints(size, f"tf.image.{owner}(size=)")
    if len(size) != value.ndim or any(s > d or s < 0 for s, d in zip(size, value.shape)):
        raise ValueError(f"tf.image.{owner}: size {list(size)} must have one entry per axis "
                         f"of the value (shape {tuple(value.shape)}), each at most its size.")
    limits = np.asarray(value.shape) - np.asarray(size) + 1
    offsets = jax.random.randint(key, (value.ndim,), 0, jnp.asarray(limits, jnp.int32))
    return jax.lax.dynamic_slice(value, tuple(offsets), size)


def _factor(key, lower, upper, owner, names=("lower", "upper")):
    if float(lower) > float(upper):
        raise ValueError(f"tf.image.{owner}: {names[1]} ({upper}) must be >= {names[0]} "
                         f"({lower}).")
    return jax.random.uniform(key, (), jnp.float32, float(lower), float(upper))


def _check_nonneg(value, what, owner):
    if float(value) < 0:
        raise ValueError(f"tf.image.{owner}: {what} must be non-negative; got {value}.")


def random_flip_left_right(image, seed=None):
    """Mirrors each image horizontally with probability 1/2."""
    return as_tensor(_random_flip(image, _stateful_key(seed), -2, "random_flip_left_right"))


def random_flip_up_down(image, seed=None):
    """Mirrors each image vertically with probability 1/2."""
    return as_tensor(_random_flip(image, _stateful_key(seed), -3, "random_flip_up_down"))


def random_brightness(image, max_delta, seed=None):
    """`adjust_brightness` by a delta uniform in [-max_delta, max_delta)."""
    _check_nonneg(max_delta, "max_delta", "random_brightness")
    delta = _factor(_stateful_key(seed), -max_delta, max_delta, "random_brightness")
    return as_tensor(_adjust_brightness(_array(image, "random_brightness"), delta))


def random_contrast(image, lower, upper, seed=None):
    """`adjust_contrast` by a factor uniform in [lower, upper)."""
    _check_nonneg(lower, "lower", "random_contrast")
    factor = _factor(_stateful_key(seed), lower, upper, "random_contrast")
    return as_tensor(_adjust_contrast(_array(image, "random_contrast"), factor))


def random_saturation(image, lower, upper, seed=None):
    """`adjust_saturation` by a factor uniform in [lower, upper)."""
    _check_nonneg(lower, "lower", "random_saturation")
    factor = _factor(_stateful_key(seed), lower, upper, "random_saturation")
    return as_tensor(_adjust_saturation(_rgb(image, "random_saturation"), factor))


def random_hue(image, max_delta, seed=None):
    """`adjust_hue` by a delta uniform in [-max_delta, max_delta), max_delta <= 0.5."""
    if not 0 <= float(max_delta) <= 0.5:
        raise ValueError(f"tf.image.random_hue: max_delta must be in [0, 0.5]; got {max_delta}.")
    delta = _factor(_stateful_key(seed), -max_delta, max_delta, "random_hue")
    return as_tensor(_adjust_hue(_rgb(image, "random_hue"), delta))


def random_crop(value, size, seed=None, name=None):
    """A crop of shape `size` at a uniformly random offset."""
    return as_tensor(_random_crop(value, size, _stateful_key(seed), "random_crop"))


def stateless_random_flip_left_right(image, seed):
    """Mirrors each image horizontally with probability 1/2, determined by `seed`."""
    key = _stateless_key(seed, "stateless_random_flip_left_right")
    return as_tensor(_random_flip(image, key, -2, "stateless_random_flip_left_right"))


def stateless_random_flip_up_down(image, seed):
    """Mirrors each image vertically with probability 1/2, determined by `seed`."""
    key = _stateless_key(seed, "stateless_random_flip_up_down")
    return as_tensor(_random_flip(image, key, -3, "stateless_random_flip_up_down"))


def stateless_random_brightness(image, max_delta, seed):
    """`adjust_brightness` by a delta in [-max_delta, max_delta) determined by `seed`."""
    _check_nonneg(max_delta, "max_delta", "stateless_random_brightness")
    delta = _factor(_stateless_key(seed, "stateless_random_brightness"), -max_delta, max_delta,
                    "stateless_random_brightness")
    return as_tensor(_adjust_brightness(_array(image, "stateless_random_brightness"), delta))


def stateless_random_contrast(image, lower, upper, seed):
    """`adjust_contrast` by a factor in [lower, upper) determined by `seed`."""
    _check_nonneg(lower, "lower", "stateless_random_contrast")
    factor = _factor(_stateless_key(seed, "stateless_random_contrast"), lower, upper,
                     "stateless_random_contrast")
    return as_tensor(_adjust_contrast(_array(image, "stateless_random_contrast"), factor))


def stateless_random_saturation(image, lower, upper, seed=None):
    """`adjust_saturation` by a factor in [lower, upper) determined by `seed`."""
    _check_nonneg(lower, "lower", "stateless_random_saturation")
    factor = _factor(_stateless_key(seed, "stateless_random_saturation"), lower, upper,
                     "stateless_random_saturation")
    return as_tensor(_adjust_saturation(_rgb(image, "stateless_random_saturation"), factor))


def stateless_random_hue(image, max_delta, seed):
    """`adjust_hue` by a delta in [-max_delta, max_delta) determined by `seed`."""
    if not 0 <= float(max_delta) <= 0.5:
        raise ValueError(f"tf.image.stateless_random_hue: max_delta must be in [0, 0.5]; "
                         f"got {max_delta}.")
    delta = _factor(_stateless_key(seed, "stateless_random_hue"), -max_delta, max_delta,
                    "stateless_random_hue")
    return as_tensor(_adjust_hue(_rgb(image, "stateless_random_hue"), delta))


def stateless_random_crop(value, size, seed, name=None):
    """A crop of shape `size` at an offset determined by `seed`."""
    return as_tensor(_random_crop(value, size, _stateless_key(seed, "stateless_random_crop"),
                                  "stateless_random_crop"))


# ---- quality measures, patches, gradients ----------------------------------------------

def _pair(img1, img2, owner):
    a, b = _array(img1, owner), _array(img2, owner)
    if a.shape != b.shape:
        raise ValueError(f"tf.image.{owner}: img1 and img2 must have the same shape; got "
                         f"{tuple(a.shape)} and {tuple(b.shape)}.")
    return _convert(a, jnp.float32), _convert(b, jnp.float32)


@tf_op
def psnr(a, b, max_val, name=None):
    """Peak signal-to-noise ratio in dB per image: `20 log10(max_val) - 10 log10(mse)`."""
    dtype = jnp.asarray(a).dtype
    a, b = _pair(a, b, "psnr")
    max_val = _convert(jnp.asarray(max_val).astype(dtype), jnp.float32)
    mse = jnp.mean(jnp.square(a - b), axis=(-3, -2, -1))
    return 20.0 * jnp.log10(max_val) - 10.0 * jnp.log10(mse)


@tf_op
def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
         return_index_map=False):
    """Structural similarity per image (Gaussian window, valid positions), in [-1, 1]."""
    dtype = jnp.asarray(img1).dtype
    a, b = _pair(img1, img2, "ssim")
    if return_index_map:
        raise NotImplementedError("tf.image.ssim: return_index_map=True is not provided.")
    # as TensorFlow: max_val is in the images' dtype, converted like them to [0, 1]
    max_val = float(_convert(jnp.asarray(max_val).astype(dtype), jnp.float32))
    return ops_image.ssim(a, b, max_val=max_val, filter_size=int(filter_size),
                          filter_sigma=float(filter_sigma), k1=k1, k2=k2,
                          data_format="channels_last")


@tf_op
def extract_patches(images, sizes, strides, rates, padding, name=None):
    """The `sizes[1] x sizes[2]` patches of a batch `(n, h, w, c)`, each flattened
    into the last axis: `(n, rows, cols, size_h * size_w * c)`."""
    images = _array(images, "extract_patches", (4,))
    sizes, strides, rates = (static_ints(v, f"tf.image.extract_patches({n}=)")
                             for v, n in ((sizes, "sizes"), (strides, "strides"),
                                          (rates, "rates")))
    for values, what in ((sizes, "sizes"), (strides, "strides"), (rates, "rates")):
        if len(values) != 4 or values[0] != 1 or values[3] != 1:
            raise ValueError(f"tf.image.extract_patches: `{what}` must be [1, rows, cols, 1]; "
                             f"got {list(values)}.")
    return ops_image.extract_patches(images, sizes[1:3], strides[1:3], rates[1:3],
                                     str(padding).lower(), data_format="channels_last")


@tf_op
def image_gradients(image):
    """(dy, dx): forward differences along height and width, zero in the last row/column."""
    image = _array(image, "image_gradients", (4,))
    dy = jnp.concatenate([image[:, 1:] - image[:, :-1], jnp.zeros_like(image[:, :1])], 1)
    dx = jnp.concatenate([image[:, :, 1:] - image[:, :, :-1],
                          jnp.zeros_like(image[:, :, :1])], 2)
    return dy, dx


@tf_op
def total_variation(images, name=None):
    """The sum of absolute differences of neighbouring pixels, per image."""
    images = _array(images, "total_variation")
    dy = jnp.abs(images[..., 1:, :, :] - images[..., :-1, :, :])
    dx = jnp.abs(images[..., :, 1:, :] - images[..., :, :-1, :])
    return jnp.sum(dy, axis=(-3, -2, -1)) + jnp.sum(dx, axis=(-3, -2, -1))


@tf_op
def sobel_edges(image):
    """Sobel edge maps `(n, h, w, c, 2)`: (dy, dx), reflect-padded, as TensorFlow."""
    image = _array(image, "sobel_edges", (4,)).astype(jnp.float32)
    padded = jnp.pad(image, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="reflect")
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float32)
    h, w = _hw(image)

    def conv(kernel):
        return sum(kernel[i, j] * padded[:, i:i + h, j:j + w, :]
                   for i in range(3) for j in range(3) if kernel[i, j])

    return jnp.stack([conv(ky), conv(ky.T)], axis=-1)


# ---- encoding (host-side, Pillow) ------------------------------------------------------

def _bytes(contents, owner):
    if isinstance(contents, (Tensor, Variable)):
        contents = np.asarray(contents.value)
    if isinstance(contents, np.ndarray) and contents.dtype.kind in "SO" and contents.ndim == 0:
        contents = contents.item()
    if not isinstance(contents, (bytes, bytearray)):
        raise TypeError(f"tf.image.{owner}: `contents` must be the file's bytes (e.g. "
                        f"open(path, 'rb').read()); got {type(contents).__name__}.")
    return bytes(contents)


def _pillow():
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a loopax dependency
        raise ImportError("tf.image.decode_*/encode_* need Pillow: pip install pillow") from None
    return Image


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None,
                 expand_animations=True):
    """A PNG/JPEG/GIF/BMP file's bytes as a (height, width, channels) uint8 image
    (`channels`: 0/None as stored, 1 gray, 3 RGB, 4 RGBA); `dtype` converts as
    `convert_image_dtype`."""
    image = _pillow().open(io.BytesIO(_bytes(contents, "decode_image")))
    channels = int(channels or 0)
    modes = {1: "L", 3: "RGB", 4: "RGBA"}
    if channels not in (0, 1, 3, 4):
        raise ValueError(f"tf.image.decode_image: channels must be 0, 1, 3 or 4; got {channels}.")
    if channels:
        image = image.convert(modes[channels])
    elif image.mode not in ("L", "RGB", "RGBA"):
        image = image.convert("RGBA" if "A" in image.mode or "transparency" in image.info
                              else "RGB")
    array = np.asarray(image, dtype=np.uint8)
    if array.ndim == 2:
        array = array[..., None]
    return convert_image_dtype(array, dtype)


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    """A PNG file's bytes as a (height, width, channels) image."""
    return decode_image(contents, channels, dtype)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """A JPEG file's bytes as a (height, width, channels) uint8 image (Pillow's
    decoder: pixel values may differ from libjpeg-turbo's by a few levels)."""
    return decode_image(contents, channels, dtypes.uint8)


def _encode(image, owner, fmt, **options):
    image = np.asarray(image.value if isinstance(image, (Tensor, Variable)) else image)
    if image.ndim != 3 or image.shape[-1] not in (1, 3, 4):
        raise ValueError(f"tf.image.{owner}: `image` must be (height, width, 1|3|4) ; got "
                         f"shape {image.shape}.")
    if image.dtype not in (np.uint8, np.uint16) or (fmt == "JPEG" and image.dtype != np.uint8):
        raise ValueError(f"tf.image.{owner}: `image` must be uint8; got {image.dtype} (use "
                         f"tf.image.convert_image_dtype(image, tf.uint8)).")
    pixels = image[..., 0] if image.shape[-1] == 1 else image
    buffer = io.BytesIO()
    _pillow().fromarray(pixels).save(buffer, format=fmt, **options)
    return buffer.getvalue()


def encode_png(image, compression=-1, name=None):
    """A (height, width, channels) uint8 image as PNG bytes."""
    level = 6 if int(compression) < 0 else int(compression)
    return _encode(image, "encode_png", "PNG", compress_level=level)


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):
    """A (height, width, 1 or 3) uint8 image as JPEG bytes."""
    return _encode(image, "encode_jpeg", "JPEG", quality=int(quality),
                   progressive=bool(progressive), optimize=bool(optimize_size),
                   subsampling=2 if chroma_downsampling else 0)


_PARAMETERS = {
    "image": "An image (height, width, channels) or a batch (n, height, width, channels).",
    "images": "An image (height, width, channels) or a batch (n, height, width, channels).",
    "value": "The tensor to crop.",
    "dtype": "The dtype of the result.", "saturate": "Clip to the target range first.",
    "k": "The number of counter-clockwise quarter turns.",
    "delta": "The amount to add.", "max_delta": "The largest delta.",
    "contrast_factor": "The contrast multiplier.", "saturation_factor": "The multiplier.",
    "gamma": "The exponent (non-negative).", "gain": "The multiplier.",
    "dct_method": "Accepted; unused.",
    "lower": "The smallest factor.", "upper": "The largest factor (excluded).",
    "seed": "An int op seed (stateful ops) or a pair of ints (stateless ops).",
    "size": "The output size: (height, width) for resize, a full shape for crops.",
    "method": "A tf.image.ResizeMethod name.",
    "preserve_aspect_ratio": "Fit inside `size` keeping the aspect ratio.",
    "antialias": "Filter when downsampling.",
    "central_fraction": "The fraction of height and width to keep, in (0, 1].",
    "offset_height": "Rows above the box.", "offset_width": "Columns left of the box.",
    "target_height": "The height of the result.", "target_width": "The width of the result.",
    "a": "An image or batch.", "b": "An image or batch (same shape).",
    "img1": "An image or batch.", "img2": "An image or batch (same shape).",
    "max_val": "The dynamic range (1.0 for floats in [0, 1], 255 for uint8).",
    "filter_size": "The Gaussian window size.", "filter_sigma": "The window's width.",
    "k1": "The SSIM constant K1.", "k2": "The SSIM constant K2.",
    "return_index_map": "Not provided (False).",
    "sizes": "[1, rows, cols, 1]: the patch size.", "strides": "[1, dy, dx, 1].",
    "rates": "[1, ry, rx, 1]: the dilation.", "padding": "'VALID' or 'SAME'.",
    "contents": "The file's bytes.",
    "channels": "0 (as stored), 1, 3 or 4.", "expand_animations": "Accepted; unused.",
    "ratio": "Accepted; unused.", "fancy_upscaling": "Accepted; unused.",
    "try_recover_truncated": "Accepted; unused.", "acceptable_fraction": "Accepted; unused.",
    "compression": "The PNG compression level (-1: default).",
    "format": "Accepted; unused.", "quality": "The JPEG quality (0-100).",
    "progressive": "Write a progressive JPEG.", "optimize_size": "Optimize the encoding.",
    "chroma_downsampling": "Subsample the chroma (4:2:0).",
    "density_unit": "Accepted; unused.", "x_density": "Accepted; unused.",
    "y_density": "Accepted; unused.", "xmp_metadata": "Accepted; unused.",
    "name": "Accepted for TensorFlow compatibility; unused.",
}

for _fn in list(globals().values()):
    if callable(_fn) and getattr(_fn, "__module__", None) == __name__ \
            and not getattr(_fn, "__name__", "_").startswith("_") and not isinstance(_fn, type):
        document(_fn, **_PARAMETERS)
del _fn


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"loopax.tf.image.{name} is not provided. loopax.tf.image has TensorFlow's resize, "
        "crop/pad, flip/rot90, adjust_*, random_* / stateless_random_*, colour-conversion, "
        "ssim/psnr, extract_patches and PNG/JPEG ops (docs/guides/migrating_from_tf_keras.md); "
        "for other image ops see loopax.ops.image (affine_transform, gaussian_blur, "
        "perspective_transform, ...) and the loopax.layers preprocessing layers.")
