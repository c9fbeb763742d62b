"""The directory datasets' budgets, checked before the bytes are read or decoded:
the texts of one batch within `MAX_TEXT_BATCH_BYTES`; an image's decoded cost
(Pillow's mode, the requested channels) from its header, a JPEG over it decoded
at a reduced scale; a WAV's channels and float32 bytes from its header (also for
`output_sequence_length`), a batch's clips within `MAX_AUDIO_BATCH_BYTES`; and a
batch mixing mono and stereo clips as Keras 3.15.1 batches it (`padded_batch`
pads the channels with zeros; `batch()` refuses them)."""

from __future__ import annotations

import struct
import tracemalloc
import wave
import zlib

import numpy as np
import pytest

import loopax
from loopax.src.utils import directory_datasets


def _sparse_text(path, size, head=b"abc"):
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)


def test_the_texts_of_one_batch_are_read_within_a_budget(tmp_path, monkeypatch):
    """4 files of 3 MiB under a 4 MiB batch budget: the second is read only up to
    what the batch has left (plus one byte) and refused, naming it; main read
    every file whole (up to 256 MiB each, 8 GiB for a batch of 32)."""
    monkeypatch.setattr(directory_datasets, "MAX_TEXT_BATCH_BYTES", 4 * 2**20)
    folder = tmp_path / "texts" / "a"
    folder.mkdir(parents=True)
    for i in range(4):
        _sparse_text(folder / f"{i}.txt", 3 * 2**20)
    dataset = loopax.utils.text_dataset_from_directory(
        tmp_path / "texts", batch_size=4, shuffle=False, labels=None, verbose=False)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"1.txt \(a text sample\) takes the texts of its "
                                             r"batch past 4,194,304 bytes.*batch_size="):
            next(iter(dataset))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12 * 2**20
    dataset = loopax.utils.text_dataset_from_directory(
        tmp_path / "texts", batch_size=4, shuffle=False, labels=None, verbose=False,
        max_length=1000)
    (batch,) = list(dataset)
    assert list(batch.numpy()) == [b"abc" + b"\0" * 997] * 4


def _png_header_only(path, width, height, depth, color_type):
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
                     + chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + chunk(b"IEND", b""))


def test_a_png_is_refused_from_its_channels_and_size_before_decoding(tmp_path):
    """10,000 x 10,000 16-bit RGBA (under the 2**27-pixel cap): Pillow holds it
    as RGBA, 4 bytes a pixel (400 MB), plus 3 bytes a pixel for its RGB copy;
    main allocated the 400 MB and then failed on the missing data."""
    pytest.importorskip("PIL")
    path = tmp_path / "a.png"
    _png_header_only(path, 10_000, 10_000, depth=16, color_type=6)
    with pytest.raises(ValueError, match=r"a.png declares 10000 x 10000 pixels in mode "
                                         r"'RGBA': decoded to 3 channels it would take "
                                         r"700,000,000 bytes.*refused before decoding"):
        directory_datasets.load_image(path, (8, 8), 3)
    # 16-bit grayscale: 2 bytes decoded, 2 as an array, 4 as float32, 8 resized in JAX
    assert directory_datasets.decode_cost((10, 10), "I;16", 1, "bicubic") == 100 * 16
    assert directory_datasets.decode_cost((10, 10), "P", 3, "bilinear") == 100 * 4


def test_a_jpeg_over_the_budget_is_decoded_at_a_reduced_scale(tmp_path, monkeypatch):
    """A 2048 x 2048 JPEG (29 MB decoded, with its RGB copy) under a 2 MiB budget:
    decoded at 1/8 scale (256 x 256), then resized to 64 x 64; a smooth gradient
    keeps its values (the closed form at the output pixels' centres, within 3)."""
    image = pytest.importorskip("PIL.Image")
    i = np.arange(2048, dtype=np.float64)
    gradient = ((i[:, None] + i[None, :]) * 255 / 4094).round().astype(np.uint8)
    path = tmp_path / "a.jpg"
    image.fromarray(np.stack([gradient] * 3, -1)).save(path, quality=95)
    monkeypatch.setattr(directory_datasets, "MAX_IMAGE_DECODE_BYTES", 2 * 2**20)
    x = directory_datasets.load_image(path, (64, 64), 3, data_format="channels_last")
    centres = (np.arange(64) + 0.5) * 32 - 0.5
    expected = (centres[:, None] + centres[None, :]) * 255 / 4094
    assert x.shape == (64, 64, 3)
    np.testing.assert_allclose(x[:, :, 0], expected, atol=3)
    monkeypatch.setattr(directory_datasets, "MAX_IMAGE_DECODE_BYTES", 1000)
    with pytest.raises(ValueError, match=r"a.jpg declares 256 x 256 pixels"):
        directory_datasets.load_image(path, (64, 64), 3)


def _wav(path, channels, frames, rate=8000):
    samples = (np.arange(frames * channels, dtype="<i2") + 1) * 100
    with wave.open(str(path), "wb") as f:
        f.setnchannels(channels)
        f.setsampwidth(2)
        f.setframerate(rate)
        f.writeframes(samples.tobytes())
    return samples.reshape(frames, channels) / 32768


def test_a_wav_declaring_65535_channels_is_refused_from_its_header(tmp_path):
    """One frame of 65,535 channels (a 128 kB file): main allocated
    output_sequence_length x 65,535 float32 (4.2 GB for 16,000 frames)."""
    path = tmp_path / "a.wav"
    _wav(path, 1, 65_535)
    data = bytearray(path.read_bytes())
    data[22:24] = struct.pack("<H", 65_535)     # the fmt chunk's channel count
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"a.wav declares 65535 channels; loopax reads clips "
                                         "of 1 to 256 channels"):
        directory_datasets.read_wav(path, output_sequence_length=16_000)


def test_output_sequence_length_is_checked_against_the_clip_budget(tmp_path):
    """A 10-frame mono clip padded to 10**9 frames would be 4 GB of zeros."""
    path = tmp_path / "a.wav"
    _wav(path, 1, 10)
    with pytest.raises(ValueError, match=r"a.wav declares 1 channel\(s\): "
                                         r"output_sequence_length=1000000000 frames of them "
                                         r"decode to 4,000,000,000 bytes"):
        directory_datasets.read_wav(path, output_sequence_length=10**9)


def test_the_clips_of_one_batch_are_decoded_within_a_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(directory_datasets, "MAX_AUDIO_BATCH_BYTES", 100_000)
    folder = tmp_path / "wavs" / "a"
    folder.mkdir(parents=True)
    for i in range(3):
        _wav(folder / f"{i}.wav", 1, 10_000)     # 40,000 bytes of float32 each
    dataset = loopax.utils.audio_dataset_from_directory(
        tmp_path / "wavs", batch_size=3, shuffle=False, labels=None, verbose=False)
    with pytest.raises(ValueError, match=r"2.wav declares 1 channel\(s\): 10000 frames of them "
                                         r"decode to 40,000 bytes.*\(20,000 bytes"):
        next(iter(dataset))


def _mono_and_stereo(tmp_path):
    folder = tmp_path / "wavs" / "a"
    folder.mkdir(parents=True)
    return (_wav(folder / "1.wav", 1, 4), _wav(folder / "2.wav", 2, 3)), tmp_path / "wavs"


def test_a_padded_batch_of_mono_and_stereo_pads_the_channels_with_zeros(tmp_path):
    """Keras 3.15.1 batches clips of unknown length with `padded_batch`, which pads
    every dimension: the mono clip gets a second channel of zeros. main raised a
    broadcasting error naming no file (or, stereo first, copied mono into both)."""
    (mono, stereo), root = _mono_and_stereo(tmp_path)
    dataset = loopax.utils.audio_dataset_from_directory(
        root, batch_size=2, shuffle=False, labels=None, verbose=False)
    (batch,) = [b.numpy() for b in dataset]
    expected = np.zeros((2, 4, 2), np.float32)
    expected[0, :, :1] = mono
    expected[1, :3] = stereo
    np.testing.assert_array_equal(batch, expected)


@pytest.mark.parametrize("options", [{"output_sequence_length": 6}, {"ragged": True}],
                         ids=["output_sequence_length", "ragged"])
def test_a_fixed_batch_of_mono_and_stereo_is_refused_naming_the_file(tmp_path, options):
    """Keras batches these with tf.data's `batch()`, which refuses clips of
    different shapes; loopax says which file and what to do."""
    _, root = _mono_and_stereo(tmp_path)
    dataset = loopax.utils.audio_dataset_from_directory(
        root, batch_size=2, shuffle=False, labels=None, verbose=False, **options)
    with pytest.raises(ValueError, match=r"2.wav has 2 channel\(s\) but .*1.wav, in the same "
                                         "batch, 1"):
        next(iter(dataset))
    single = loopax.utils.audio_dataset_from_directory(
        root, batch_size=None, shuffle=False, labels=None, verbose=False, **options)
    assert [np.asarray(x).shape[-1] for x in single] == [1, 2]


def test_a_long_strip_is_resized_without_a_huge_intermediate(tmp_path):
    """A 400,000 x 1 grayscale PNG (1 kB) resized to 256 x 4: main resized the
    height first, through a 256 x 400,000 float32 array (410 MB)."""
    image = pytest.importorskip("PIL.Image")
    row = (np.arange(400_000) // 100_000 * 60 + 10).astype(np.uint8)   # 4 flat bands
    path = tmp_path / "a.png"
    image.fromarray(row[None, :]).save(path)
    tracemalloc.start()
    try:
        x = directory_datasets.load_image(path, (256, 4), 1, data_format="channels_last")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20
    np.testing.assert_array_equal(x[:, :, 0], np.tile([10, 70, 130, 190], (256, 1)))


@pytest.mark.parametrize("width", [1, 2])
def test_a_wav_is_decoded_into_one_float32_array(tmp_path, width):
    """8 MB of samples: the peak is the file's bytes plus the float32 clip (main
    made temporaries the size of the clip: `(x - 128) / 128`, and a copy of the
    bytes cut to whole samples); the values are tf.audio.decode_wav's."""
    rng = np.random.default_rng(width)
    raw = rng.integers(0, 256, 8 * 2**20 + 1, dtype=np.uint8).tobytes()   # a stray byte
    path = tmp_path / "a.wav"
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(width)
        f.setframerate(8000)
        f.writeframesraw(raw)
    tracemalloc.start()
    try:
        audio = directory_datasets.read_wav(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    body = raw[:len(raw) // width * width]
    if width == 1:
        expected = (np.frombuffer(body, np.uint8).astype("float32") - 128) / 128
    else:
        expected = np.frombuffer(body, "<i2").astype("float32") / 32768
    np.testing.assert_array_equal(audio[:, 0], expected)
    assert peak < len(raw) + audio.nbytes + 2**20
