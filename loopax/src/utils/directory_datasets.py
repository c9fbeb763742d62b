"""`image_dataset_from_directory`, `text_dataset_from_directory`,
`audio_dataset_from_directory`: a directory tree of files as a dataset `fit()` takes.

With `labels="inferred"` each sub-directory is a class (`class_names` sorted
alphanumerically), files are listed and shuffled with `seed` exactly as
Keras lists them, and `validation_split`/`subset` take the last
`int(validation_split * n)` files as the validation subset. Each returns a
`loopax.tf.data.Dataset` with `class_names` and `file_paths` (as Keras returns a
`tf.data.Dataset`), whose batches are loaded on demand and iterate as Tensors.
"""

from __future__ import annotations

import io
import struct
import warnings
import wave
from typing import Any

import numpy as np

from loopax.src.api_export import export
from loopax.src.config import image_data_format
from loopax.src.ops.image import resize
from loopax.src.utils import dataset_utils, image_utils, safe_open
from loopax.src.utils.dataset_utils import BatchDataset
from loopax.src.utils.image_utils import pil_image

IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
IMAGE_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5")
COLOR_CHANNELS = {"grayscale": 1, "rgb": 3, "rgba": 4}


def _index(directory, labels, label_mode, class_names, shuffle, seed, validation_split, subset,
           follow_links, verbose, formats, kind):
    """Validated arguments, then `(file_paths, labels, class_names, label_mode, seed)`."""
    dataset_utils.check_labels_arguments(labels, label_mode, class_names, kind)
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    dataset_utils.check_validation_split_arg(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = int(np.random.randint(1e6))
    paths, labels, class_names = dataset_utils.index_directory(
        directory, labels, formats=formats, class_names=class_names, shuffle=shuffle, seed=seed,
        follow_links=follow_links, verbose=verbose)
    return paths, labels, class_names, label_mode, seed


def _build(directory, paths, labels, class_names, label_mode, subset, validation_split,
           batch_size, shuffle, seed, load_batch_of, kind):
    def make_dataset(files, encoded, training):
        return dataset_utils.as_dataset(BatchDataset(
            len(files), load_batch_of(files), labels=encoded, batch_size=batch_size,
            shuffle=shuffle and training, seed=seed, class_names=class_names,
            file_paths=files))
    return dataset_utils.datasets_from_files(directory, paths, labels, class_names, label_mode,
                                             subset, validation_split, make_dataset, kind)


# ---------------------------------------------------------------- images


@export(
    "loopax.utils.image_dataset_from_directory",
    "loopax.preprocessing.image_dataset_from_directory",
)
def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, verbose=True):
    """The images (.bmp, .gif, .jpeg, .jpg, .png) under `directory`, as
    `keras.utils.image_dataset_from_directory` (same arguments and defaults).
    Needs Pillow (`pip install loopax[images]`).

    Args:
        directory: the root directory.
        labels: "inferred" (each sub-directory of `directory` is a class), None
            (no labels), or a list/tuple of int labels, one per file in
            alphanumeric file order.
        label_mode: "int" (int32 `(batch,)`), "categorical" (one-hot float32),
            "binary" (float32 `(batch, 1)`, 2 classes) or None (no labels).
        class_names: with `labels="inferred"`, the sub-directories to use, in
            label order (default: all, sorted).
        color_mode: "rgb", "rgba" or "grayscale" (3, 4 or 1 channels).
        batch_size: images per batch (None: one image per item).
        image_size: `(height, width)` (or an int) the images are resized to.
        shuffle: shuffle the files (with `seed`), and again each epoch.
        seed: the shuffle's seed (needed with `validation_split` and `shuffle`).
        validation_split: the fraction of files (the last `int(split * n)` after
            shuffling) kept for validation.
        subset: "training", "validation" or "both" (a pair), with `validation_split`.
        follow_links: follow symbolic links to sub-directories.
        verbose: print how many files and classes were found.
        interpolation: "bilinear", "nearest", "bicubic", "lanczos3" or "lanczos5".
        crop_to_aspect_ratio: crop the centre to the target's aspect ratio first.
        pad_to_aspect_ratio: pad to the target's aspect ratio first.
        data_format: "channels_last" or "channels_first" (default: the config's).

    Returns:
        A `loopax.tf.data.Dataset` (`fit` takes it) with `class_names` and
        `file_paths`, yielding float32 images `(batch, *image_size, channels)`
        (0–255) `x` or `(x, labels)`; a `(training, validation)` pair with
        `subset="both"`.
    """
    if color_mode not in COLOR_CHANNELS:
        raise ValueError(f'`color_mode` must be one of "rgb", "rgba", "grayscale". '
                         f"Received: color_mode={color_mode!r}")
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    elif not isinstance(image_size, (list, tuple)) or len(image_size) != 2:
        raise ValueError(f"`image_size` must be (height, width), two ints. "
                         f"Received: image_size={image_size!r}")
    interpolation = interpolation.lower()
    if interpolation not in IMAGE_INTERPOLATIONS:
        raise ValueError(f"`interpolation` must be one of {IMAGE_INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("Pass at most one of `crop_to_aspect_ratio` and `pad_to_aspect_ratio`.")
    pil_image()   # fail early without Pillow
    paths, labels, class_names, label_mode, seed = _index(
        directory, labels, label_mode, class_names, shuffle, seed, validation_split, subset,
        follow_links, verbose, IMAGE_FORMATS, "image")
    options = dict(image_size=tuple(image_size), channels=COLOR_CHANNELS[color_mode],
                   interpolation=interpolation, crop_to_aspect_ratio=crop_to_aspect_ratio,
                   pad_to_aspect_ratio=pad_to_aspect_ratio, data_format=data_format)

    def load_batch_of(files):
        return lambda indices: np.stack([load_image(files[i], **options) for i in indices])
    return _build(directory, paths, labels, class_names, label_mode, subset, validation_split,
                  batch_size, shuffle, seed, load_batch_of, "image")


def load_image(path, image_size, channels, interpolation="bilinear",
               crop_to_aspect_ratio=False, pad_to_aspect_ratio=False, data_format=None):
    """One image file as a float32 array `(*image_size, channels)` (0–255), the
    first frame of an animation, resized as `loopax.ops.image.resize` does
    ("bilinear" and "nearest" in NumPy: no compilation per image size)."""
    with open_image_within_budget(path, image_size, channels, interpolation) as img:
        mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
        if not (img.mode == mode or channels == 1 and img.mode in ("I;16", "I")):
            img = img.convert(mode)
        # 8-bit images stay uint8 until resized (a quarter of the memory of float32
        # at full size); the values are the same (uint8 times float32 is float32)
        x = np.asarray(img)
        if x.dtype != np.uint8:
            x = x.astype("float32")
    if x.ndim == 2:
        x = x[:, :, None]
    if interpolation in ("bilinear", "nearest"):
        if crop_to_aspect_ratio:
            x = _crop_to_aspect_ratio(x, image_size)
        elif pad_to_aspect_ratio:
            x = _pad_to_aspect_ratio(x, image_size)
        x = _resize_separably(x, image_size, interpolation)
    else:
        x = x.astype("float32", copy=False)
        x = np.asarray(resize(x, image_size, interpolation=interpolation,
                              crop_to_aspect_ratio=crop_to_aspect_ratio,
                              pad_to_aspect_ratio=pad_to_aspect_ratio,
                              data_format="channels_last"))
    if (data_format or image_data_format()) == "channels_first":
        x = x.transpose(2, 0, 1)
    return x


# The most bytes one image may take while it is decoded, converted to the
# requested channels and (before resizing) held as an array: a 40-megapixel RGB
# photo takes about 320 MB. Each image is checked from its header, before decoding.
MAX_IMAGE_DECODE_BYTES = 512 * 2**20


def decode_cost(size: tuple[int, int], mode: str, channels: int,
                interpolation: str) -> int:
    """The bytes an image of `size` (width, height) in Pillow's `mode` takes
    while `load_image` reads it: decoded (1, 2 or 4 bytes a pixel, as Pillow
    holds it), then as an array in `channels` (uint8; 16- and 32-bit grayscale
    kept as they are, and as float32), and as float32 twice for the
    interpolations resized in JAX."""
    decoded = 1 if mode in ("1", "L", "P") else 2 if mode.startswith("I;16") else 4
    if channels == 1 and mode in ("I;16", "I"):
        array = decoded + 4
    else:
        array = channels
    if interpolation not in ("bilinear", "nearest"):
        array += 2 * 4 * channels
    return size[0] * size[1] * (decoded + array)


def open_image_within_budget(path: str, image_size: tuple[int, int], channels: int,
                             interpolation: str) -> Any:
    """The decoded `PIL.Image` of `path`, its cost (`decode_cost`) checked from its
    header against `MAX_IMAGE_DECODE_BYTES` before decoding; a JPEG over it is
    decoded at the smallest scale (1/2, 1/4, 1/8) still at least `image_size`.

    Raises:
        ValueError: the image costs more even so, or cannot be read (names `path`).
    """
    Image = pil_image()
    data = safe_open.read_bytes(path, image_utils.MAX_IMAGE_FILE_BYTES, "an image file")
    try:
        with warnings.catch_warnings():   # loopax's own caps, below, decide
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
    except (Image.DecompressionBombError, OSError, SyntaxError, ValueError) as e:
        raise _unreadable_image(path, e) from None
    _check_pixels(img, path)
    cost = decode_cost(img.size, img.mode, channels, interpolation)
    if cost > MAX_IMAGE_DECODE_BYTES and img.format == "JPEG":
        img.draft(img.mode, (image_size[1], image_size[0]))
        cost = decode_cost(img.size, img.mode, channels, interpolation)
    if cost > MAX_IMAGE_DECODE_BYTES:
        width, height = img.size
        raise ValueError(
            f"{path} declares {width} x {height} pixels in mode {img.mode!r}: decoded to "
            f"{channels} channels it would take {cost:,} bytes, more than loopax decodes for "
            f"one image ({MAX_IMAGE_DECODE_BYTES:,}); refused before decoding. Resize the "
            "file (or use interpolation='bilinear', which needs less).")
    try:
        img.load()
    except (Image.DecompressionBombError, OSError, SyntaxError, ValueError, EOFError) as e:
        raise _unreadable_image(path, e) from None
    return img


def _check_pixels(img, path):
    width, height = img.size
    if width * height > image_utils.MAX_IMAGE_PIXELS:
        raise ValueError(f"{path} declares {width} x {height} pixels, more than loopax "
                         f"decodes ({image_utils.MAX_IMAGE_PIXELS}); refused before decoding. "
                         "Resize the file.")


def _unreadable_image(path, error):
    return ValueError(f"{path} is not an image loopax can read ({type(error).__name__}: "
                      f"{str(error)[:200]}); the file is damaged, truncated or not an image "
                      f"({', '.join(IMAGE_FORMATS)}): replace it or remove it.")


def _resize_separably(x, size, interpolation):
    """`x` (h, w, c) resized to `size` one axis at a time, first the one whose
    resizing leaves the smaller intermediate (a 1 x 400,000 strip resized to
    256 x 4 would otherwise pass through 256 x 400,000); the result is the same."""
    height, width = x.shape[:2]
    axes = [(0, size[0]), (1, size[1])]
    if size[0] * width > height * size[1]:
        axes.reverse()
    for axis, length in axes:
        x = _resize_axis(x, length, axis, interpolation)
    return x.astype("float32", copy=False)


def _resize_axis(x, size, axis, interpolation):
    """`x` resized along `axis` with half-pixel centres and no antialiasing
    (TensorFlow's and `jax.image.resize`'s sampling)."""
    n = x.shape[axis]
    if n == size:
        return x
    centres = (np.arange(size) + 0.5) * (n / size)
    if interpolation == "nearest":
        return np.take(x, np.minimum(np.floor(centres).astype(int), n - 1), axis=axis)
    source = np.clip(centres - 0.5, 0, n - 1)
    low = np.floor(source).astype(int)
    high = np.minimum(low + 1, n - 1)
    shape = [1] * x.ndim
    shape[axis] = size
    frac = (source - low).astype("float32").reshape(shape)
    return np.take(x, low, axis=axis) * (1 - frac) + np.take(x, high, axis=axis) * frac


def _crop_to_aspect_ratio(x, size):
    """The largest centred box of `x` (h, w, c) with the aspect ratio of `size`."""
    height, width = x.shape[:2]
    crop_h = max(min(height, int(width * size[0] / size[1])), 1)
    crop_w = max(min(width, int(height * size[1] / size[0])), 1)
    top, left = int((height - crop_h) / 2), int((width - crop_w) / 2)
    return x[top:top + crop_h, left:left + crop_w]


def _pad_to_aspect_ratio(x, size):
    """`x` (h, w, c) zero-padded equally on both sides to the aspect ratio of `size`."""
    height, width = x.shape[:2]
    pad_h = max(height, int(width * size[0] / size[1]))
    pad_w = max(width, int(height * size[1] / size[0]))
    top, left = int((pad_h - height) / 2), int((pad_w - width) / 2)
    return np.pad(x, ((top, top), (left, left), (0, 0)))


# ---------------------------------------------------------------- text


@export(
    "loopax.utils.text_dataset_from_directory",
    "loopax.preprocessing.text_dataset_from_directory",
)
def text_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                class_names=None, batch_size=32, max_length=None, shuffle=True,
                                seed=None, validation_split=None, subset=None,
                                follow_links=False, verbose=True):
    """The `.txt` files under `directory`, as `keras.utils.text_dataset_from_directory`
    (same arguments and defaults).

    Args:
        directory: the root directory.
        labels: "inferred" (each sub-directory of `directory` is a class), None
            (no labels), or a list/tuple of int labels, one per file in
            alphanumeric file order.
        label_mode: "int" (int32 `(batch,)`), "categorical" (one-hot float32),
            "binary" (float32 `(batch, 1)`, 2 classes) or None (no labels).
        class_names: with `labels="inferred"`, the sub-directories to use, in
            label order (default: all, sorted).
        batch_size: texts per batch (None: one text per item).
        max_length: keep only the first `max_length` bytes of each file.
        shuffle: shuffle the files (with `seed`), and again each epoch.
        seed: the shuffle's seed (needed with `validation_split` and `shuffle`).
        validation_split: the fraction of files (the last `int(split * n)` after
            shuffling) kept for validation.
        subset: "training", "validation" or "both" (a pair), with `validation_split`.
        follow_links: follow symbolic links to sub-directories.
        verbose: print how many files and classes were found.

    Returns:
        A `loopax.tf.data.Dataset` (`fit` takes it) with `class_names` and
        `file_paths`, yielding `x`, string tensors of the texts (`bytes`, as Keras's
        tf.data), or `(x, labels)`; a `(training, validation)` pair with
        `subset="both"`.
    """
    paths, labels, class_names, label_mode, seed = _index(
        directory, labels, label_mode, class_names, shuffle, seed, validation_split, subset,
        follow_links, verbose, (".txt",), "text")

    def load_batch_of(files):
        return lambda indices: _object_array(read_texts([files[i] for i in indices],
                                                        max_length))
    return _build(directory, paths, labels, class_names, label_mode, subset, validation_split,
                  batch_size, shuffle, seed, load_batch_of, "text")


# The most bytes of one text file read without `max_length` (Keras reads it all),
# and of all the texts of one batch.
MAX_TEXT_BYTES = 256 * 2**20
MAX_TEXT_BATCH_BYTES = 512 * 2**20


def read_texts(paths: list[str], max_length: int | None = None) -> list[str]:
    """`read_text` of each path, all of them within `MAX_TEXT_BATCH_BYTES`: a
    file is read only up to what the batch has left, and refused past it."""
    texts, left = [], MAX_TEXT_BATCH_BYTES
    for path in paths:
        data = _text_bytes(path, max_length, left)
        left -= len(data)
        texts.append(_decode_text(data, path, max_length))
    return texts


def read_text(path: str, max_length: int | None = None) -> str:
    """A text file's contents, cut to its first `max_length` bytes (as Keras's
    `tf.strings.substr`); read whole only up to `MAX_TEXT_BYTES`.

    UTF-8 text is decoded as such. A file that is not UTF-8 keeps its bytes, as
    Keras's (bytes) strings keep them: each undecodable byte becomes a lone
    surrogate (Python's "surrogateescape": `text.encode("utf-8",
    "surrogateescape")` gives the file's bytes back), with a warning naming the
    file; a character cut by `max_length` keeps its leading bytes that way too."""
    return _decode_text(_text_bytes(path, max_length, MAX_TEXT_BATCH_BYTES), path, max_length)


def _decode_text(data, path, max_length):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        cut_at_end = max_length is not None and len(data) == max_length and \
            e.reason == "unexpected end of data"
        if not cut_at_end:
            warnings.warn(f"{path} is not UTF-8 text (byte {e.start}: "
                          f"{data[e.start:e.start + 1]!r}); its undecodable bytes are kept "
                          "as lone surrogates (text.encode('utf-8', 'surrogateescape') gives "
                          "them back). Re-save the file as UTF-8.", stacklevel=2)
        return data.decode("utf-8", errors="surrogateescape")


def _text_bytes(path, max_length, left):
    """The bytes `read_text` decodes: the first `max_length`, or all up to
    `MAX_TEXT_BYTES`, refused past the `left` bytes its batch has left (read up
    to that, plus one)."""
    if max_length is not None and max_length <= left:
        return safe_open.read_bytes(path, max_length, "a text sample", truncate=True)
    if max_length is None and MAX_TEXT_BYTES <= left:
        return safe_open.read_bytes(path, MAX_TEXT_BYTES, "a text sample",
                                    hint="Pass max_length= to read each file's first "
                                         "max_length bytes.")
    data = safe_open.read_bytes(path, left + 1, "a text sample", truncate=True)
    if len(data) > left:
        raise ValueError(
            f"{path} (a text sample) takes the texts of its batch past "
            f"{MAX_TEXT_BATCH_BYTES:,} bytes, more than loopax reads for one batch; refused. "
            "Pass a smaller batch_size=, or max_length= to read each file's first bytes.")
    return data[:max_length]


# ---------------------------------------------------------------- audio


@export("loopax.utils.audio_dataset_from_directory")
def audio_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, batch_size=32, sampling_rate=None,
                                 output_sequence_length=None, ragged=False, shuffle=True,
                                 seed=None, validation_split=None, subset=None,
                                 follow_links=False, verbose=True):
    """The PCM `.wav` files under `directory`, read with the standard library's
    `wave`, as `keras.utils.audio_dataset_from_directory` (same arguments and defaults).

    Args:
        directory: the root directory.
        labels: "inferred" (each sub-directory of `directory` is a class), None
            (no labels), or a list/tuple of int labels, one per file in
            alphanumeric file order.
        label_mode: "int" (int32 `(batch,)`), "categorical" (one-hot float32),
            "binary" (float32 `(batch, 1)`, 2 classes) or None (no labels).
        class_names: with `labels="inferred"`, the sub-directories to use, in
            label order (default: all, sorted).
        batch_size: clips per batch (None: one clip per item).
        sampling_rate: the rate every file must have (loopax does not resample;
            Keras resamples with tensorflow-io).
        output_sequence_length: cut or zero-pad every clip to this many samples.
        ragged: give each batch as a NumPy object array of clips
            `(samples_i, channels)` instead of padding them.
        shuffle: shuffle the files (with `seed`), and again each epoch.
        seed: the shuffle's seed (needed with `validation_split` and `shuffle`).
        validation_split: the fraction of files (the last `int(split * n)` after
            shuffling) kept for validation.
        subset: "training", "validation" or "both" (a pair), with `validation_split`.
        follow_links: follow symbolic links to sub-directories.
        verbose: print how many files and classes were found.

    Returns:
        A `loopax.tf.data.Dataset` (`fit` takes it) with `class_names` and
        `file_paths`, yielding `x` or `(x, labels)`, `x` float32 clips
        `(batch, samples, channels)` in [-1, 1) zero-padded to the batch's longest;
        a `(training, validation)` pair with `subset="both"`.
    """
    if ragged and output_sequence_length is not None:
        raise ValueError("Pass at most one of `ragged` and `output_sequence_length`.")
    if sampling_rate is not None and (not isinstance(sampling_rate, int) or sampling_rate <= 0):
        raise ValueError(f"`sampling_rate` must be a positive int. Received: "
                         f"sampling_rate={sampling_rate!r}")
    paths, labels, class_names, label_mode, seed = _index(
        directory, labels, label_mode, class_names, shuffle, seed, validation_split, subset,
        follow_links, verbose, (".wav",), "audio")

    def load_batch_of(files):
        def load(indices):
            paths = [files[i] for i in indices]
            clips = read_clips(paths, sampling_rate, output_sequence_length)
            if ragged or output_sequence_length is not None:
                check_one_channel_count(paths, clips)
            return _object_array(clips) if ragged else pad_clips(clips)
        return load
    return _build(directory, paths, labels, class_names, label_mode, subset, validation_split,
                  batch_size, shuffle, seed, load_batch_of, "audio")


# The most bytes of float32 samples decoded from one `.wav` (an hour of 48 kHz
# stereo is 1.4 GB: pass `output_sequence_length`) and for one batch; the most
# channels of one clip (a 64-track recording has 64).
MAX_AUDIO_BYTES = 1 * 2**30
MAX_AUDIO_BATCH_BYTES = 2 * 2**30
MAX_AUDIO_CHANNELS = 256


def read_clips(paths: list[str], sampling_rate: int | None = None,
               output_sequence_length: int | None = None) -> list[np.ndarray]:
    """`read_wav` of each path, all of them within `MAX_AUDIO_BATCH_BYTES` (and
    their batch, zero-padded to the longest, within it too)."""
    clips, left = [], MAX_AUDIO_BATCH_BYTES
    for path in paths:
        clip = read_wav(path, sampling_rate, output_sequence_length,
                        max_bytes=min(MAX_AUDIO_BYTES, left))
        left -= clip.nbytes
        clips.append(clip)
    padded = len(clips) * max(len(c) for c in clips) * max(c.shape[1] for c in clips) * 4
    if padded > MAX_AUDIO_BATCH_BYTES:
        longest = paths[int(np.argmax([len(c) for c in clips]))]
        raise ValueError(
            f"The batch holding {longest} ({len(clips)} clips) takes {padded:,} bytes padded "
            f"to its longest clip, more than loopax decodes for one batch "
            f"({MAX_AUDIO_BATCH_BYTES:,}); pass output_sequence_length= or a smaller "
            "batch_size=.")
    return clips


def check_one_channel_count(paths: list[str], clips: list[np.ndarray]) -> None:
    """Refuses clips of different channel counts in one batch that is not padded
    (Keras batches clips cut to `output_sequence_length`, or ragged, with
    tf.data's `batch()`, which refuses them; a padded batch pads the channels)."""
    for path, clip in zip(paths, clips):
        if clip.shape[1] != clips[0].shape[1]:
            raise ValueError(
                f"{path} has {clip.shape[1]} channel(s) but {paths[0]}, in the same batch, "
                f"{clips[0].shape[1]}: clips cut to output_sequence_length (or ragged) are "
                "batched only with one channel count, as in Keras. Convert the files to one "
                "channel count, or leave output_sequence_length=None and ragged=False (the "
                "channels are then zero-padded, as Keras pads them).")


def read_wav(path: str, sampling_rate: int | None = None,
             output_sequence_length: int | None = None,
             max_bytes: int = MAX_AUDIO_BYTES) -> np.ndarray:
    """A PCM `.wav` file as float32 `(samples, channels)` in [-1, 1) (as
    `tf.audio.decode_wav`), cut or zero-padded to `output_sequence_length`
    (only that many frames are read). Its header is checked before reading:
    at most `MAX_AUDIO_CHANNELS` channels and `max_bytes` of float32 samples."""
    try:
        with safe_open.open_regular(path, "a .wav file") as raw, wave.open(raw, "rb") as f:
            width, channels, rate = f.getsampwidth(), f.getnchannels(), f.getframerate()
            frames = f.getnframes()
            _check_wav_header(path, channels, frames, output_sequence_length, max_bytes)
            if output_sequence_length is not None:
                frames = min(frames, output_sequence_length)
            data = f.readframes(frames)
    except (wave.Error, EOFError, struct.error) as e:
        raise ValueError(f"{path} is not a PCM .wav file loopax can read "
                         f"({type(e).__name__}: {str(e)[:200]}); the file is damaged or "
                         "truncated, or not PCM: convert it to 8-, 16- or 32-bit PCM .wav.") \
            from None
    if sampling_rate is not None and rate != sampling_rate:
        raise ValueError(f"{path} is sampled at {rate} Hz, not sampling_rate={sampling_rate}; "
                         "loopax does not resample: resample the files, or pass "
                         "sampling_rate=None.")
    if width not in (1, 2, 4):
        raise ValueError(f"{path}: {8 * width}-bit samples are not supported; use 8-, 16- "
                         "or 32-bit PCM.")
    # one float32 array, scaled in place (no temporaries the size of the clip)
    dtype = {1: np.uint8, 2: "<i2", 4: "<i4"}[width]
    audio = np.frombuffer(data, dtype, count=len(data) // width).astype("float32")
    if width == 1:   # 8-bit PCM is unsigned
        audio -= 128
    audio /= 2.0 ** (8 * width - 1)
    audio = audio[:len(audio) // channels * channels].reshape(-1, channels)
    if output_sequence_length is not None:
        audio = pad_clips([audio[:output_sequence_length]], output_sequence_length)[0]
    return audio


def _object_array(items):
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _check_wav_header(path, channels, frames, output_sequence_length, max_bytes):
    if not 1 <= channels <= MAX_AUDIO_CHANNELS:
        raise ValueError(f"{path} declares {channels} channels; loopax reads clips of 1 to "
                         f"{MAX_AUDIO_CHANNELS} channels. The file is damaged, or convert it.")
    decoded = channels * 4 * (frames if output_sequence_length is None
                              else output_sequence_length)
    if decoded > max_bytes:
        length = (f"{frames} frames" if output_sequence_length is None
                  else f"output_sequence_length={output_sequence_length} frames")
        raise ValueError(
            f"{path} declares {channels} channel(s): {length} of them decode to {decoded:,} "
            f"bytes of float32 samples, more than loopax decodes for it ({max_bytes:,} bytes: "
            f"{MAX_AUDIO_BYTES:,} a clip, {MAX_AUDIO_BATCH_BYTES:,} a batch); refused before "
            "reading. Pass a (smaller) output_sequence_length= or a smaller batch_size=.")


def pad_clips(clips: list[np.ndarray], length: int | None = None) -> np.ndarray:
    """Clips `(samples_i, channels_i)` zero-padded at the end (in time and in
    channels, as tf.data's `padded_batch`) into one array `(n, length or the
    longest, the most channels)`."""
    length = max(len(c) for c in clips) if length is None else length
    out = np.zeros((len(clips), length, max(c.shape[1] for c in clips)), dtype="float32")
    for row, clip in zip(out, clips):
        row[:len(clip), :clip.shape[1]] = clip[:length]
    return out
