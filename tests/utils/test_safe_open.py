"""`utils/safe_open.py`: what is not a regular file is refused before `open()`
can block (a FIFO with no writer would wait forever), and reads stop at their
byte budget."""

from __future__ import annotations

import json
import os
import socket

import pytest

from loopax.src.utils import safe_open


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for read in (lambda: safe_open.open_regular(fifo, "a test file"),
                 lambda: safe_open.read_bytes(fifo, 10, "a test file"),
                 lambda: safe_open.require_regular(fifo, "a test file")):
        with pytest.raises(ValueError, match=r"pipe \(a test file\) is a FIFO"):
            read()


def test_a_symlink_to_dev_zero_is_refused(tmp_path):
    link = tmp_path / "data.txt"
    os.symlink("/dev/zero", link)
    with pytest.raises(ValueError, match="character device"):
        safe_open.read_bytes(link, 10**12)


def test_a_socket_and_a_directory_are_refused(tmp_path):
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(ValueError, match="a socket"):
            safe_open.open_regular(path)
    finally:
        server.close()
    with pytest.raises(ValueError, match="a directory"):
        safe_open.open_regular(tmp_path)
    with pytest.raises(FileNotFoundError):
        safe_open.open_regular(tmp_path / "missing")


def test_reads_stop_at_the_budget(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert safe_open.read_bytes(path, 100) == b"x" * 100
    with pytest.raises(ValueError, match=r"100 bytes or more, more than loopax reads for it "
                                         r"\(99 bytes\).*raise it"):
        safe_open.read_bytes(path, 99, hint="raise it")
    assert safe_open.read_bytes(path, 7, truncate=True) == b"x" * 7


def test_text_and_json_errors_name_the_file(tmp_path):
    path = tmp_path / "w.json"
    path.write_bytes(b'{"caf\xe9": 1}')
    with pytest.raises(ValueError, match=r"w.json \(a word index\) is not utf-8 text: byte 5"):
        safe_open.read_text(path, 100, "a word index")
    with pytest.raises(ValueError, match=r"w.json \(a word index\) is not JSON"):
        safe_open.read_json(path, 100, "a word index")
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="w.json"):
        safe_open.read_json(path, 10**6, "a word index")
    path.write_text(json.dumps({"a": [[[1]]]}))
    assert safe_open.read_json(path, 100) == {"a": [[[1]]]}


def _readers():
    import numpy as np

    import loopax
    from loopax.src.applications import imagenet_utils
    from loopax.src.datasets import fashion_mnist

    def load_weights(path):
        model = loopax.Sequential([loopax.Input((2,)), loopax.layers.Dense(1)])
        model.load_weights(path)

    return {
        "vocabulary": lambda p: loopax.layers.StringLookup(vocabulary=str(p)),
        "class-index": lambda p: imagenet_utils.decode_predictions(
            np.zeros((1, 1000)), class_index_path=str(p)),
        "load_model": lambda p: loopax.saving.load_model(str(p)),
        "load_weights": load_weights,
        "fashion-mnist": lambda p: fashion_mnist._read_idx(str(p), 8),
        "keras-file-check": lambda p: loopax.saving.load_model(str(p) + ".keras"),
    }


@pytest.mark.parametrize("reader", sorted(_readers()))
def test_every_reader_refuses_a_fifo_without_blocking(tmp_path, reader):
    """Each of these blocked forever in open() on the old code."""
    path = tmp_path / "pipe.weights.h5"
    os.mkfifo(path)
    os.mkfifo(str(path) + ".keras")
    with pytest.raises(ValueError, match="is a FIFO"):
        _readers()[reader](path)
