"""`tf.train.Checkpoint.restore` checks the shard's header (shapes, dtypes) against the
Variables before it reads any data, and reads the shard from one open file; a state-file
entry that is not UTF-8 or holds a NUL is refused naming the file and the entry; saves
of one `CheckpointManager` from several threads lose no checkpoint."""

from __future__ import annotations

import sys
import threading
import tracemalloc

import numpy as np
import pytest

import loopax.tf as tf
from loopax.src.tf_compat import train as train_module
from loopax.src.utils import safe_open


def test_a_shape_mismatch_is_refused_before_any_data_is_read(tmp_path):
    big = np.ones((2048, 2048), "float32")     # 16 MiB of data in the shard
    path = tf.train.Checkpoint(w=tf.Variable(big), b=tf.Variable(np.ones(3, "float32"))) \
        .write(str(tmp_path / "c"))
    target = tf.train.Checkpoint(w=tf.Variable(np.zeros((2048, 2047), "float32")),
                                 b=tf.Variable(np.zeros(3, "float32")))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as caught:
            target.restore(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert "c.safetensors" in message and "'w'" in message
    assert "(2048, 2048)" in message and "(2048, 2047)" in message
    assert peak < 4 * 2**20, peak    # the old code read all 16 MiB first
    np.testing.assert_array_equal(np.asarray(target.b.value), np.zeros(3))   # nothing assigned


def test_a_dtype_mismatch_is_refused_naming_both_dtypes(tmp_path):
    """TensorFlow refuses it too ("expected dtype int32 does not equal original dtype
    float"); the old code cast 1.5 to 1 silently."""
    path = tf.train.Checkpoint(v=tf.Variable(np.full(4, 1.5, "float32"))).write(
        str(tmp_path / "c"))
    target = tf.train.Checkpoint(v=tf.Variable(np.zeros(4, "int32")))
    with pytest.raises(ValueError, match=r"c\.safetensors.*'v'.*float32.*int32"):
        target.restore(path)
    np.testing.assert_array_equal(np.asarray(target.v.value), np.zeros(4))


def test_a_deferred_value_is_checked_when_its_variable_appears(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable(np.ones((2, 3), "float32"))).write(
        str(tmp_path / "c"))
    checkpoint = tf.train.Checkpoint()
    checkpoint.restore(path)
    with pytest.raises(ValueError, match=r"'v' was saved as float32 but the Variable is int32"):
        checkpoint.v = tf.Variable(np.zeros((2, 3), "int32"))


def test_restore_opens_the_shard_once(tmp_path, monkeypatch):
    """The aliases (the shard's metadata) come from the file the arrays come from: the
    old code opened it a second time, so a file replaced meanwhile mixed two versions."""
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "c"))
    opened = []
    real_open = safe_open.open_regular

    def counting_open(name, what="file"):
        opened.append(str(name))
        return real_open(name, what)
    monkeypatch.setattr(safe_open, "open_regular", counting_open)
    tf.train.Checkpoint(model=model).restore(path)
    assert opened == [str(tmp_path / "c.safetensors")]
    opened.clear()
    tf.train.load_checkpoint(path)
    assert opened == [str(tmp_path / "c.safetensors")]


@pytest.mark.parametrize("entry, shown", [(b"ckpt-\xff-1", r"ckpt-\\xff-1"),
                                          (b"ckpt\x00-1", r"ckpt\\x00-1")])
def test_a_state_file_entry_not_utf8_or_with_a_nul_names_the_file_and_entry(
        tmp_path, entry, shown):
    folder = tmp_path / "ckpts"
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(v=tf.Variable(np.ones(2, "float32"))), str(folder), max_to_keep=3)
    manager.save()
    (folder / "checkpoint").write_bytes(
        b'model_checkpoint_path: "ckpt-1"\nall_model_checkpoint_paths: "' + entry + b'"\n')
    for read in (lambda: tf.train.latest_checkpoint(str(folder)),
                 lambda: tf.train.CheckpointManager(
                     tf.train.Checkpoint(), str(folder), max_to_keep=3)):
        with pytest.raises(ValueError) as caught:
            read()
        message = str(caught.value)
        assert str(folder / "checkpoint") in message and "line 2" in message
        assert shown.replace("\\\\", "\\") in message


def test_saves_from_two_threads_lose_no_checkpoint(tmp_path):
    folder = tmp_path / "ckpts"
    variable = tf.Variable(np.zeros(8, "float32"))
    checkpoint = tf.train.Checkpoint(v=variable)
    manager = tf.train.CheckpointManager(checkpoint, str(folder), max_to_keep=None)
    saved, errors = [], []
    start = threading.Barrier(4)

    def save_many():
        start.wait()
        try:
            for _ in range(6):
                saved.append(manager.save())
        except Exception as e:  # reported below
            errors.append(e)
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=save_many) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        sys.setswitchinterval(old_interval)
    assert errors == []
    expected = [str(folder / f"ckpt-{n}") for n in range(1, 25)]
    assert sorted(saved, key=lambda p: int(p.rsplit("-", 1)[1])) == expected
    assert manager.checkpoints == expected
    assert tf.train.CheckpointManager(checkpoint, str(folder), None).checkpoints == expected
    assert int(checkpoint.save_counter.value) == 24
    for path in expected:
        tf.train.Checkpoint(v=tf.Variable(np.ones(8, "float32"))).restore(path)


def test_read_header_gives_the_metadata_of_the_same_read(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable(np.ones(2, "float32"))).write(
        str(tmp_path / "c"))
    from loopax.src.saving import weights_file
    with open(path + ".safetensors", "rb") as f:
        header, metadata = weights_file.read_header_and_metadata(f, path, 2**20)
    assert set(header) == {"save_counter", "v"} and header["v"][:2] == ("F32", (2,))
    assert metadata["format"] == train_module.FORMAT


def test_checkpoint_save_from_two_threads_lists_every_checkpoint(tmp_path):
    checkpoint = tf.train.Checkpoint(v=tf.Variable(np.zeros(4, "float32")))
    prefix = str(tmp_path / "ckpts" / "ckpt")
    saved = []
    start = threading.Barrier(2)

    def save_many():
        start.wait()
        for _ in range(8):
            saved.append(checkpoint.save(prefix))
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=save_many) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        sys.setswitchinterval(old_interval)
    expected = [f"{prefix}-{n}" for n in range(1, 17)]
    assert sorted(saved, key=lambda p: int(p.rsplit("-", 1)[1])) == expected
    assert tf.train.CheckpointManager(checkpoint, str(tmp_path / "ckpts"), None).checkpoints \
        == expected
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpts")) == expected[-1]
