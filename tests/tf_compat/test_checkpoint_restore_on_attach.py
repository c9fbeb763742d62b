"""tf.train.Checkpoint restores what joins it after `restore` (a list append, an
attribute), dataset iterators keep their position, and `tf.train.load_checkpoint`
reads a checkpoint: the checkpoint guide's cells, against TF 2.21's printed output."""

from __future__ import annotations

import numpy as np
import pytest

import loopax.tf as tf


def test_list_append_after_restore_restores(tmp_path):
    save = tf.train.Checkpoint()
    save.listed = [tf.Variable(1.0)]
    save.listed.append(tf.Variable(2.0))
    save.mapped = {"one": save.listed[0]}
    save.mapped["two"] = save.listed[1]
    save_path = save.save(str(tmp_path / "tf_list_example"))

    restore = tf.train.Checkpoint()
    v2 = tf.Variable(0.0)
    restore.mapped = {"two": v2}
    restore.restore(save_path)
    restore.listed = []
    v1 = tf.Variable(0.0)
    restore.listed.append(v1)
    # TF 2.21 prints: 2.0 / ListWrapper([]) / 1.0
    assert v2.numpy() == 2.0
    assert repr(tf.train.Checkpoint(listed=[]).listed) == "ListWrapper([])"
    assert v1.numpy() == 1.0


def test_iterator_position_is_saved_and_restored(tmp_path):
    dataset = tf.data.Dataset.range(10)
    iterator = iter(dataset)
    first = [int(next(iterator)) for _ in range(3)]
    ckpt = tf.train.Checkpoint(iterator=iterator)
    path = ckpt.save(str(tmp_path / "c"))
    after_save = [int(next(iterator)) for _ in range(2)]
    ckpt.restore(path)
    after_restore = [int(next(iterator)) for _ in range(2)]
    fresh = iter(dataset)
    tf.train.Checkpoint(iterator=fresh).restore(path)
    # TF 2.21 prints: [0, 1, 2] / [3, 4] / [3, 4] / 3
    assert (first, after_save, after_restore, int(next(fresh))) == ([0, 1, 2], [3, 4], [3, 4], 3)


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.l1 = tf.keras.layers.Dense(5)

    def call(self, x):
        return self.l1(x)


def test_restore_into_a_structure_rebuilt_by_attribute_names(tmp_path):
    net = Net()
    net(tf.ones((1, 1)))
    net.l1.bias.assign(np.arange(5.0, dtype="float32"))
    path = tf.train.Checkpoint(step=tf.Variable(1), net=net).save(str(tmp_path / "ckpt"))

    to_restore = tf.Variable(tf.zeros([5]))
    fake_layer = tf.train.Checkpoint(bias=to_restore)
    new_root = tf.train.Checkpoint(net=tf.train.Checkpoint(l1=fake_layer))
    status = new_root.restore(path)
    # the guide: "This gets the restored value" (TF 2.21 prints the saved bias)
    np.testing.assert_array_equal(to_restore.numpy(), np.arange(5.0))
    status.assert_existing_objects_matched()
    deferred = tf.Variable(tf.zeros([1, 5]))
    fake_layer.kernel = deferred   # restored when it joins, as the guide shows
    np.testing.assert_array_equal(deferred.numpy(), net.l1.kernel.numpy())

    missing = tf.train.Checkpoint(net=tf.train.Checkpoint(l9=tf.train.Checkpoint(
        bias=tf.Variable(tf.zeros([5])))))
    with pytest.raises(AssertionError, match="net/l9/bias"):
        missing.restore(path).assert_existing_objects_matched()


def test_load_checkpoint_reader(tmp_path):
    net = Net()
    net(tf.ones((1, 1)))
    tf.train.Checkpoint(step=tf.Variable(1), net=net).save(str(tmp_path / "ckpt"))
    reader = tf.train.load_checkpoint(str(tmp_path))
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    # TF 2.21: shape [1, 5], dtype float32 ('net/l1/_kernel/...' there: Keras 3's name)
    key = "net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    assert shapes[key] == [1, 5]
    assert dtypes[key].name == "float32"
    np.testing.assert_array_equal(reader.get_tensor(key), net.l1.kernel.numpy())
    # TF 2.21: reader.get_tensor('step/.ATTRIBUTES/VARIABLE_VALUE') -> 1 (int32)
    assert reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE") == 1
    assert reader.has_tensor("step") and not reader.has_tensor("nope")
    with pytest.raises(KeyError, match="not found in checkpoint"):
        reader.get_tensor("nope")
