"""tf.data's file readers and `tf.io.read_file` open files as every loopax reader does
(issue #34): a FIFO or a device is refused naming it instead of blocking or reading forever,
and a compressed file is inflated only up to the readers' budget."""

import bz2
import gzip
import os
import zlib

import numpy as np
import pytest

import loopax.tf as tf
from loopax.src.tf_compat import files

LINES = [b"first line", b"second", b"", b"third \xc3\xa9"]


@pytest.mark.parametrize("kind", [None, "GZIP", "ZLIB", "BZ2"])
def test_text_lines_of_each_compression(tmp_path, kind):
    raw = b"\n".join(LINES) + b"\r\n"
    packed = {None: lambda b: b, "GZIP": gzip.compress, "ZLIB": zlib.compress,
              "BZ2": bz2.compress}[kind](raw)
    path = tmp_path / "lines.txt"
    path.write_bytes(packed)
    lines = list(tf.data.TextLineDataset(str(path), compression_type=kind).as_numpy_iterator())
    assert lines == LINES


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
@pytest.mark.parametrize("reader", ["TextLineDataset", "TFRecordDataset", "read_file",
                                    "TextLineDataset-GZIP"])
def test_a_fifo_is_refused_naming_it(tmp_path, reader):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"pipe.*FIFO.*not a regular file"):
        if reader == "read_file":
            tf.io.read_file(str(fifo))
        else:
            name, _, kind = reader.partition("-")
            list(getattr(tf.data, name)(str(fifo), compression_type=kind or None))


def test_a_link_to_a_device_is_refused(tmp_path):
    link = tmp_path / "zero"
    os.symlink("/dev/zero", link)
    with pytest.raises(ValueError, match="character device"):
        list(tf.data.TextLineDataset(str(link)))


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
def test_a_file_inflating_past_the_budget_is_refused(tmp_path, kind, monkeypatch):
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1 << 16)
    packed = (gzip.compress if kind == "GZIP" else zlib.compress)(b"a" * (1 << 20))
    path = tmp_path / "bomb"
    path.write_bytes(packed)
    with pytest.raises(ValueError, match=r"bomb.*more than loopax reads"):
        list(tf.data.TextLineDataset(str(path), compression_type=kind))


def test_a_damaged_gzip_file_names_itself(tmp_path):
    path = tmp_path / "broken.gz"
    path.write_bytes(gzip.compress(b"x" * 1000)[:-12])
    with pytest.raises(ValueError, match=r"broken.gz.*not a readable GZIP file"):
        list(tf.data.TextLineDataset(str(path), compression_type="GZIP"))


def test_read_file_returns_the_bytes(tmp_path):
    path = tmp_path / "blob"
    data = np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    path.write_bytes(data)
    assert tf.io.read_file(str(path)).numpy() == data


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_tflite_model_path_that_is_a_fifo_is_refused(tmp_path):
    fifo = tmp_path / "model.tflite"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"model.tflite.*tf.lite model file.*FIFO"):
        tf.lite.Interpreter(model_path=str(fifo))
