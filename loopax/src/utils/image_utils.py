"""`load_img`, `img_to_array`, `array_to_img`, `save_img`: images as PIL
objects and NumPy arrays, as in `keras.utils` (Pillow: `pip install loopax[images]`)."""

from __future__ import annotations

import io
import pathlib
import warnings

import numpy as np

from loopax.src.api_export import export
from loopax.src.config import image_data_format
from loopax.src.dtypes import floatx
from loopax.src.ops.image import resize
from loopax.src.utils import safe_open

PIL_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")
COLOR_MODES = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}
# loopax's own caps on an image file it decodes: the pixels (11,585 x 11,585; a
# 0.5 MB PNG can declare 13,000 x 13,000, 2 GB once decoded) and the file's bytes.
MAX_IMAGE_PIXELS = 2**27
MAX_IMAGE_FILE_BYTES = 512 * 2**20


def pil_image():
    """The `PIL.Image` module, or an ImportError saying how to install it."""
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("Reading and writing images needs Pillow: "
                          "`pip install loopax[images]` (or `pip install pillow`).") from e
    return Image


def _data_format(data_format):
    data_format = data_format or image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"`data_format` must be 'channels_last' or 'channels_first', "
                         f"got {data_format!r}.")
    return data_format


@export("loopax.utils.array_to_img")
def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A PIL image from one image array.

    Args:
        x: a 3D array `(height, width, channels)` (1, 3 or 4 channels), or
            `(channels, height, width)` with `data_format="channels_first"`.
        data_format: "channels_last" or "channels_first" (default: the config's).
        scale: shift and scale the values to span 0–255 first.
        dtype: the dtype `x` is read as (default floatx).

    Returns:
        A `PIL.Image.Image` ("L", "I" above 255 unscaled, "RGB" or "RGBA").
    """
    Image = pil_image()
    data_format = _data_format(data_format)
    x = np.asarray(x, dtype=dtype or floatx())
    if x.ndim != 3:
        raise ValueError(f"array_to_img expects a 3D image array (height, width, channels); "
                         f"got shape {x.shape}.")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        peak = np.max(x)
        if peak != 0:
            x = x / peak
        x = x * 255
    channels = x.shape[2]
    if channels == 4:
        return Image.fromarray(x.astype("uint8"), "RGBA")
    if channels == 3:
        return Image.fromarray(x.astype("uint8"), "RGB")
    if channels == 1:
        if np.max(x) > 255:   # 32-bit signed integer grayscale
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"array_to_img: unsupported number of channels {channels} (shape "
                     f"{x.shape}); use 1, 3 or 4.")


@export("loopax.utils.img_to_array")
def img_to_array(img, data_format=None, dtype=None):
    """The pixels of a PIL image as an array.

    Args:
        img: a PIL image (or anything `np.asarray` reads as 2D or 3D).
        data_format: "channels_last" or "channels_first" (default: the config's).
        dtype: the array's dtype (default floatx).

    Returns:
        A 3D array `(height, width, channels)` (channels first if asked); a
        grayscale image gets one channel.
    """
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=dtype or floatx())
    if x.ndim == 2:
        x = x[:, :, None]
    elif x.ndim != 3:
        raise ValueError(f"img_to_array: unsupported image shape {x.shape}.")
    return x.transpose(2, 0, 1) if data_format == "channels_first" else x


@export("loopax.utils.save_img")
def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes an image array to a file.

    Args:
        path: the file path (or a file object, with `file_format`).
        x: a 3D image array, as `array_to_img` takes.
        data_format: "channels_last" or "channels_first" (default: the config's).
        file_format: the PIL format; default from the path's suffix ("jpg" is JPEG).
        scale: scale the values to span 0–255 first.
        **kwargs: passed to `PIL.Image.Image.save`.

    An RGBA image saved as JPEG is converted to RGB, with a warning.
    """
    if file_format is None and isinstance(path, (str, pathlib.Path)):
        file_format = pathlib.Path(path).suffix[1:].lower() or None
    if file_format and file_format.lower() == "jpg":
        file_format = "jpeg"
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format == "jpeg":
        warnings.warn("JPEG has no alpha channel: the image is saved as RGB. Save as .png to "
                      "keep it.", stacklevel=2)
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


@export("loopax.utils.load_img")
def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """Loads an image file as a PIL image.

    Args:
        path: a path (str or `pathlib.Path`) or an `io.BytesIO`.
        color_mode: "grayscale", "rgb" or "rgba".
        target_size: None (original size) or `(height, width)`.
        interpolation: PIL resampling for `target_size`: "nearest", "bilinear",
            "bicubic", "hamming", "box" or "lanczos".
        keep_aspect_ratio: crop the centre to the target's aspect ratio first.

    Returns:
        A `PIL.Image.Image` in the asked color mode (grayscale keeps 16- and
        32-bit images as they are).
    """
    pil_image()   # fail early without Pillow
    if color_mode not in COLOR_MODES:
        raise ValueError(f'`color_mode` must be "grayscale", "rgb" or "rgba", '
                         f"got {color_mode!r}.")
    if isinstance(path, pathlib.Path):
        path = str(path.resolve())
    elif not isinstance(path, (str, bytes, io.BytesIO)):
        raise TypeError(f"load_img: `path` must be a path or io.BytesIO, not "
                        f"{type(path).__name__}.")
    if isinstance(path, io.BytesIO):
        img = decode_image(path, "an io.BytesIO")
    else:
        img = open_image(path)
    img = _convert_mode(img, color_mode)
    if target_size is not None:
        img = _resize(img, target_size, interpolation, keep_aspect_ratio)
    return img


def open_image(path):
    """The decoded `PIL.Image` of the image file `path`: a regular file of at most
    `MAX_IMAGE_FILE_BYTES`, declaring at most `MAX_IMAGE_PIXELS` pixels (checked
    from its header, before decoding); Pillow's errors named with the path."""
    data = safe_open.read_bytes(path, MAX_IMAGE_FILE_BYTES, "an image file")
    return decode_image(io.BytesIO(data), path)


def decode_image(stream, where):
    """`PIL.Image.open(stream)`, decoded, within `MAX_IMAGE_PIXELS`; errors name `where`."""
    Image = pil_image()
    try:
        with warnings.catch_warnings():   # loopax's own cap, below, decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(stream)
        width, height = img.size
    except (Image.DecompressionBombError, OSError, SyntaxError, ValueError) as e:
        raise _unreadable(where, e) from None
    if width * height > MAX_IMAGE_PIXELS:
        raise ValueError(f"{where} declares {width} x {height} pixels, more than loopax "
                         f"decodes ({MAX_IMAGE_PIXELS}); refused (decoded it would take "
                         f"{width * height * 4 / 2**30:.1f} GB or more). Resize the file.")
    try:
        img.load()
    except (Image.DecompressionBombError, OSError, SyntaxError, ValueError, EOFError) as e:
        raise _unreadable(where, e) from None
    return img


def _unreadable(where, error):
    return ValueError(f"{where} is not an image loopax can read ({type(error).__name__}: "
                      f"{str(error)[:200]}); the file is damaged, truncated or not an image "
                      "(.bmp, .gif, .jpeg, .jpg, .png): replace it or remove it.")


def _convert_mode(img, color_mode):
    if color_mode == "grayscale":
        # 8-, 16- and 32-bit grayscale stay as they are.
        return img if img.mode in ("L", "I;16", "I") else img.convert("L")
    return img if img.mode == COLOR_MODES[color_mode] else img.convert(COLOR_MODES[color_mode])


def _resize(img, target_size, interpolation, keep_aspect_ratio):
    if interpolation not in PIL_INTERPOLATIONS:
        raise ValueError(f"`interpolation` must be one of {PIL_INTERPOLATIONS}, "
                         f"got {interpolation!r}.")
    width_height = (target_size[1], target_size[0])
    if img.size == width_height:
        return img
    resample = getattr(pil_image().Resampling, interpolation.upper())
    box = None
    if keep_aspect_ratio:   # the largest centred box with the target's aspect ratio
        width, height = img.size
        crop_width = min(width, height * target_size[1] // target_size[0])
        crop_height = min(height, width * target_size[0] // target_size[1])
        left, top = (width - crop_width) // 2, (height - crop_height) // 2
        box = (left, top, left + crop_width, top + crop_height)
    return img.resize(width_height, resample, box=box)


def smart_resize(x, size, interpolation="bilinear", data_format="channels_last"):
    """Resizes images without distorting them: the largest centred box with
    the target's aspect ratio is cropped, then resized.

    Args:
        x: an image `(h, w, c)` or a batch `(n, h, w, c)` (channels first if asked).
        size: `(height, width)`.
        interpolation: as `loopax.ops.image.resize` takes it.
        data_format: "channels_last" or "channels_first".

    Returns:
        The resized images (a NumPy array for a NumPy input).
    """
    if len(size) != 2:
        raise ValueError(f"`size` must be (height, width), got {size!r}.")
    if np.ndim(x) not in (3, 4):
        raise ValueError(f"smart_resize expects an image (height, width, channels) or a batch "
                         f"(batch, height, width, channels); got shape {np.shape(x)}.")
    out = resize(x, tuple(size), interpolation=interpolation, crop_to_aspect_ratio=True,
                 data_format=data_format)
    return np.asarray(out) if isinstance(x, np.ndarray) else out
