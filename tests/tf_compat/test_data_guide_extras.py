"""TensorFlow names the data and modules guides use: `tf.data.TFRecordDataset` (the
TFRecord framing read as byte strings), `Tensor.set_shape`, and `tf.saved_model.save`
of a Module without traced functions (variables only, as TensorFlow)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import loopax.tf as tf


def _frame(record):
    # TFRecord framing: little-endian uint64 length, uint32 CRC, data, uint32 CRC (the
    # CRCs are zero here: loopax does not check them).
    return struct.pack("<QI", len(record), 0) + record + struct.pack("<I", 0)


def test_tfrecord_dataset_reads_the_records_of_each_file(tmp_path):
    first, second = tmp_path / "a.tfrec", tmp_path / "b.tfrec"
    first.write_bytes(_frame(b"one") + _frame(b"") + _frame(b"\x00three"))
    second.write_bytes(_frame(b"four"))
    records = [r.numpy() for r in tf.data.TFRecordDataset([str(first), str(second)])]
    assert records == [b"one", b"", b"\x00three", b"four"]
    (tmp_path / "empty.tfrec").write_bytes(b"")
    assert list(tf.data.TFRecordDataset(str(tmp_path / "empty.tfrec"))) == []
    (tmp_path / "cut.tfrec").write_bytes(_frame(b"abcdef")[:-6])
    with pytest.raises(ValueError, match="truncated"):
        list(tf.data.TFRecordDataset(str(tmp_path / "cut.tfrec")))


def test_set_shape_checks_compatibility_and_changes_nothing():
    t = tf.constant(np.zeros((2, 3), np.float32))
    t.set_shape([2, None])
    t.set_shape(tf.TensorShape([2, 3]))
    assert t.shape == (2, 3)
    with pytest.raises(ValueError, match="not compatible"):
        t.set_shape([3, 3])


def test_saving_a_module_without_functions_keeps_its_variables(tmp_path):
    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([1.0, 2.0])

        def __call__(self, x):
            return x * self.w

    with pytest.warns(UserWarning, match="only its variables are saved"):
        tf.saved_model.save(Module(), str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.w.numpy(), [1.0, 2.0])


def test_a_matmul_shape_error_is_invalid_argument_as_in_eager_tensorflow():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\(1, 4\).*\(3, 3\)"):
        tf.matmul(tf.ones((1, 4)), tf.ones((3, 3)))
    with pytest.raises(ValueError):   # still a ValueError, as loopax.ops raises
        tf.matmul(tf.ones((1, 4)), tf.ones((3, 3)))
