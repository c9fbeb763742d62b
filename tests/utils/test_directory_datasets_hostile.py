"""The directory datasets' readers within their bounds, errors naming the file:
text read up to `max_length` (a link to /dev/zero, a FIFO), text that is not
UTF-8 keeps its bytes (as Keras's byte strings do) with a warning, a WAV read
up to `output_sequence_length` frames, an image declaring 13,000 x 13,000 pixels
refused from its header, damaged WAVs and images named."""

from __future__ import annotations

import io
import os
import struct
import wave
import zlib

import numpy as np
import pytest

import loopax
from loopax.src.utils import directory_datasets, image_utils


def test_text_from_dev_zero_or_a_fifo_is_refused(tmp_path):
    os.symlink("/dev/zero", tmp_path / "a.txt")
    os.mkfifo(tmp_path / "b.txt")
    for name in ("a.txt", "b.txt"):
        with pytest.raises(ValueError, match=rf"{name} \(a text sample\) is a"):
            directory_datasets.read_text(tmp_path / name, max_length=10)


def test_text_is_read_only_up_to_max_length_or_the_budget(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    path.write_bytes(b"abc" * 1000)
    assert directory_datasets.read_text(path, max_length=5) == "abcab"
    monkeypatch.setattr(directory_datasets, "MAX_TEXT_BYTES", 100)
    with pytest.raises(ValueError, match=r"a.txt \(a text sample\).*Pass max_length="):
        directory_datasets.read_text(path)


def test_latin1_text_keeps_its_bytes_with_a_warning(tmp_path):
    """Keras 3.15.1 (tf.io.read_file) yields the file's bytes b'caf\\xe9'; the old
    code dropped the byte silently (errors="ignore") and gave 'caf'."""
    path = tmp_path / "a.txt"
    path.write_bytes(b"caf\xe9")
    with pytest.warns(UserWarning, match=r"a.txt is not UTF-8 text \(byte 3"):
        text = directory_datasets.read_text(path)
    assert text.encode("utf-8", "surrogateescape") == b"caf\xe9"


def test_a_character_cut_by_max_length_keeps_its_bytes_without_warning(tmp_path, recwarn):
    path = tmp_path / "a.txt"
    path.write_bytes("é!".encode())                  # b"\xc3\xa9!"
    text = directory_datasets.read_text(path, max_length=1)
    assert text.encode("utf-8", "surrogateescape") == b"\xc3"   # tf.strings.substr's bytes
    assert not recwarn.list


def _wav(path, frames, declared_frames=None):
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(8000)
        f.writeframes(np.arange(frames, dtype="<i2").tobytes())
    if declared_frames is not None:   # the data chunk's size field, as a 2 GB clip's
        data = bytearray(path.read_bytes())
        at = data.index(b"data") + 4
        data[at:at + 4] = struct.pack("<I", declared_frames * 2)
        path.write_bytes(bytes(data))


def test_a_wav_is_read_up_to_output_sequence_length(tmp_path, monkeypatch):
    path = tmp_path / "a.wav"
    _wav(path, 1000, declared_frames=2**30)
    audio = directory_datasets.read_wav(path, output_sequence_length=10)
    np.testing.assert_array_equal(audio[:, 0], np.arange(10) / 32768)
    with pytest.raises(ValueError, match=r"a.wav declares 1 channel\(s\): 1073741824 frames.*"
                                         "output_sequence_length="):
        directory_datasets.read_wav(path)


def test_a_damaged_wav_names_the_file(tmp_path):
    path = tmp_path / "a.wav"
    path.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    with pytest.raises(ValueError, match=r"a.wav is not a PCM .wav file loopax can read"):
        directory_datasets.read_wav(path)


def _png_header_only(path, width, height):
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
                     + chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + chunk(b"IEND", b""))


def test_an_image_declaring_13000_squared_pixels_is_refused_before_decoding(tmp_path):
    pytest.importorskip("PIL")
    path = tmp_path / "a.png"
    _png_header_only(path, 13_000, 13_000)
    with pytest.raises(ValueError, match=r"a.png declares 13000 x 13000 pixels"):
        directory_datasets.load_image(path, (8, 8), 3)
    with pytest.raises(ValueError, match=r"a.png declares 13000 x 13000 pixels"):
        image_utils.load_img(path)


def test_damaged_images_name_the_file(tmp_path):
    pil = pytest.importorskip("PIL.Image")
    path = tmp_path / "a.png"
    path.write_bytes(b"not an image")
    with pytest.raises(ValueError, match=r"a.png is not an image loopax can read"):
        directory_datasets.load_image(path, (8, 8), 3)
    buffer = io.BytesIO()
    pil.fromarray(np.zeros((64, 64, 3), np.uint8) + 100).save(buffer, "PNG")
    path.write_bytes(buffer.getvalue()[:-40])           # truncated
    with pytest.raises(ValueError, match=r"a.png is not an image loopax can read"):
        directory_datasets.load_image(path, (8, 8), 3)


def test_follow_links_walks_each_directory_once(tmp_path):
    """A link back up the tree (a loop) and a second link to one directory: the
    old code listed 42 files for 2 (os.walk follows the loop until ELOOP)."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.txt").write_text(name)
    os.symlink(tmp_path, tmp_path / "a" / "loop")
    os.symlink(tmp_path / "b", tmp_path / "a" / "also_b")
    os.symlink(tmp_path / "a", tmp_path / "a" / "self")
    ds = directory_datasets.text_dataset_from_directory(
        tmp_path, follow_links=True, shuffle=False, verbose=False, batch_size=None)
    assert sorted(os.path.relpath(p, tmp_path) for p in ds.file_paths) == [
        "a/also_b/x.txt", "a/x.txt", "b/x.txt"]
    ds = directory_datasets.text_dataset_from_directory(
        tmp_path, follow_links=False, shuffle=False, verbose=False, batch_size=None)
    assert sorted(os.path.relpath(p, tmp_path) for p in ds.file_paths) == ["a/x.txt",
                                                                           "b/x.txt"]


def test_latin1_text_iterates_as_its_bytes_in_a_dataset(tmp_path):
    """The dataset's elements are the files' bytes, as Keras 3.15.1's (tf.io.read_file):
    b'caf\\xe9' for the Latin-1 file; the old code raised UnicodeEncodeError
    (surrogates not allowed) at the first batch, naming no file."""
    folder = tmp_path / "texts" / "a"
    folder.mkdir(parents=True)
    (folder / "1.txt").write_bytes(b"caf\xe9")
    (folder / "2.txt").write_bytes("thé".encode())
    with pytest.warns(UserWarning, match="1.txt is not UTF-8 text"):
        dataset = loopax.utils.text_dataset_from_directory(
            tmp_path / "texts", batch_size=2, shuffle=False, labels=None)
        (batch,) = [element for element in dataset]
    assert list(batch.numpy()) == [b"caf\xe9", "thé".encode()]
