"""`tf.io` (read_file, write_file, decode_raw, base64) and the `tf.strings` byte and
code point ops the tensor guide uses, against NumPy / Python's own decoding; the
values below are what TensorFlow 2.21 prints for the guide's examples."""

from __future__ import annotations

import base64

import numpy as np
import pytest

import loopax.tf as tf


def test_decode_raw_reads_bytes_as_numbers_like_numpy_frombuffer():
    t = tf.io.decode_raw(tf.constant("Duck"), tf.uint8)
    assert str(t) == "tf.Tensor([ 68 117  99 107], shape=(4,), dtype=uint8)"   # TF 2.21
    raw = np.arange(6, dtype="<i2").tobytes()
    batch = tf.io.decode_raw(tf.constant([raw, raw[::-1]]), tf.int16)
    np.testing.assert_array_equal(batch.numpy(), np.stack([
        np.frombuffer(raw, "<i2"), np.frombuffer(raw[::-1], "<i2")]))
    big = tf.io.decode_raw(raw, tf.int16, little_endian=False)
    np.testing.assert_array_equal(big.numpy(), np.frombuffer(raw, ">i2"))
    cut = tf.io.decode_raw(tf.constant([b"\x01\x02\x03", b"\x04"]), tf.uint8, fixed_length=2)
    np.testing.assert_array_equal(cut.numpy(), [[1, 2], [4, 0]])
    with pytest.raises(ValueError, match="same length.*fixed_length"):
        tf.io.decode_raw(tf.constant([b"ab", b"c"]), tf.uint8)
    with pytest.raises(ValueError, match="whole number of int16"):
        tf.io.decode_raw(b"abc", tf.int16)


def test_read_and_write_file_round_trip(tmp_path):
    path = tmp_path / "sub" / "f.bin"
    tf.io.write_file(str(path), tf.constant(b"\x00ab"))
    assert path.read_bytes() == b"\x00ab"
    got = tf.io.read_file(tf.constant(str(path)))
    assert got.numpy() == b"\x00ab" and got.dtype == tf.string


def test_base64_is_web_safe_as_tensorflow():
    data = bytes(range(250, 256)) + b"?>"
    enc = tf.io.encode_base64(data)
    assert enc.numpy() == base64.urlsafe_b64encode(data).rstrip(b"=")
    assert tf.io.decode_base64(enc).numpy() == data


def test_protos_raise_an_error_naming_the_loopax_way():
    with pytest.raises(AttributeError, match="TFRecord.*from_tensor_slices"):
        tf.io.parse_example
    with pytest.raises(AttributeError, match="read_file, write_file, decode_raw"):
        tf.io.no_such_op


def test_bytes_split_and_unicode_decode_match_python():
    assert str(tf.strings.bytes_split(tf.constant("Duck"))) == \
        "tf.Tensor([b'D' b'u' b'c' b'k'], shape=(4,), dtype=string)"   # TF 2.21
    text = "アヒル 🦆"
    points = tf.strings.unicode_decode(tf.constant(text), "UTF-8")
    assert points.numpy().tolist() == [ord(c) for c in text] and points.dtype == tf.int32
    rows = tf.strings.unicode_decode(tf.constant(["ab", text]), "UTF-8")
    assert rows.to_list() == [[97, 98], [ord(c) for c in text]]
    assert rows[1].numpy().tolist() == [ord(c) for c in text]
    assert rows.to_tensor().numpy().tolist()[0] == [97, 98] + [0] * 3
    assert tf.strings.unicode_encode(points, "UTF-8").numpy() == text.encode()
    assert tf.strings.bytes_split(tf.constant(["ab", "c"])).to_list() == [[b"a", b"b"], [b"c"]]
    bad = tf.strings.unicode_decode(b"a\xffb", "UTF-8", replacement_char=63)
    assert bad.numpy().tolist() == [97, 63, 98]
