"""TensorFlow's "training checkpoints" guide (scripts/checkpoints.py): a
Checkpoint of a model, an optimizer and a step Variable through a
CheckpointManager, restored into fresh objects; and tf.summary event files."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest


def test_checkpoint_round_trip_and_manager(run_guide, tmp_path):
    printed, _ = run_guide("checkpoints", tmp_path=tmp_path)
    assert printed["fresh_start"][0].tolist() == [1]
    # saves at steps 10..50 are checkpoints 1..5; the last three are kept
    assert printed["kept"][0].tolist() == [3, 4, 5]
    assert sorted(os.listdir(tmp_path / "tf_ckpts")) == [
        "checkpoint", "ckpt-3.safetensors", "ckpt-4.safetensors", "ckpt-5.safetensors"]
    assert printed["latest_matches"][0].tolist() == [1]
    assert printed["restored_step"][0].tolist() == [50, 50]
    assert printed["restored_kernel_diff"][0].tolist() == [0.0]
    assert printed["restored_iterations"][0].tolist() == [49]   # 49 steps before step 50
    # the restored model and optimizer (Adam moments included) continue identically
    assert printed["continued"][0].tolist() == [0.0, 0.0, 0.0]
    # restored before they were built: the values wait for the first call / apply
    assert printed["deferred_before_build"][0].tolist() == [2]   # kernel and bias
    assert printed["deferred_step"][0].tolist() == [50]
    assert printed["continued_deferred"][0].tolist() == [0.0, 0.0, 0.0]
    assert printed["deferred_consumed"][0].tolist() == [0]


def _events(logdir):
    """(tag, step, value) of the scalar summaries in the event files of `logdir`
    (TFRecord framing: length, CRC, Event proto, CRC)."""
    event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")
    out = []
    for name in sorted(os.listdir(logdir)):
        data = (logdir / name).read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset:offset + 8])
            event = event_pb2.Event.FromString(data[offset + 12:offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                out.append((value.tag, event.step, value.simple_value))
    return out


def test_summary_scalars_are_in_the_event_file(run_guide, tmp_path):
    run_guide("checkpoints", tmp_path=tmp_path)
    events = _events(tmp_path / "logs")
    assert [(tag, step) for tag, step, _ in events] == [("loss", s) for s in (10, 20, 30, 40, 50)]
    assert all(np.isfinite(v) and v > 0 for _, _, v in events)


def test_summary_written_inside_a_compiled_function_each_call(tmp_path):
    import loopax.tf as tf

    writer = tf.summary.create_file_writer(str(tmp_path))

    @tf.function
    def step(x, i):
        tf.summary.scalar("x_squared", x * x, step=i)
        return x

    with writer.as_default():
        for i in range(3):
            step(tf.constant(float(i)), tf.constant(i))
    assert tf.summary.scalar("ignored", 1.0, step=0) is False   # no default writer
    assert _events(tmp_path) == [("x_squared", 0, 0.0), ("x_squared", 1, 1.0),
                                 ("x_squared", 2, 4.0)]


def test_restore_refuses_other_shapes_and_names_missing_paths(tmp_path):
    import loopax.tf as tf

    path = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).save(str(tmp_path / "c"))
    with pytest.raises(ValueError, match=r"'v' was saved with shape \(2,\)"):
        tf.train.Checkpoint(v=tf.Variable([1.0, 2.0, 3.0])).restore(path)
    with pytest.raises(FileNotFoundError, match="latest_checkpoint"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(str(tmp_path / "nothing-1"))
    status = tf.train.Checkpoint(v=tf.Variable([0.0, 0.0]), w=tf.Variable(1.0)).restore(path)
    with pytest.raises(AssertionError, match="'w'"):
        status.assert_consumed()


def test_deferred_restore_of_another_shape_raises_at_build(tmp_path):
    import loopax.tf as tf

    saved = tf.keras.layers.Dense(3)
    saved(np.ones((1, 2), np.float32))
    path = tf.train.Checkpoint(layer=saved).save(str(tmp_path / "c"))
    other = tf.keras.layers.Dense(4)
    status = tf.train.Checkpoint(layer=other).restore(path)
    assert status.unused_keys == ["layer/bias", "layer/kernel"]
    with pytest.raises(ValueError, match=r"'layer/bias' was saved with shape \(3,\)"):
        other(np.ones((1, 2), np.float32))
    # Reported once: while the checkpoint lives, other models still build.
    assert tf.keras.layers.Dense(5)(np.ones((1, 2), np.float32)).shape == (1, 5)
    assert status.unused_keys == ["layer/bias", "layer/kernel"]   # still not restored


def test_summary_without_tensorboardx_names_the_install(monkeypatch):
    import importlib

    import loopax.tf as tf

    real = importlib.import_module

    def without_tensorboardx(name, *args, **kwargs):
        if name == "tensorboardX":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", without_tensorboardx)
    with pytest.raises(ImportError, match=r"pip install loopax\[tensorboard\]"):
        tf.summary.create_file_writer("unused")


def test_summaries_flushed_twice_in_one_second_are_all_kept(tmp_path):
    import loopax.tf as tf

    writer = tf.summary.create_file_writer(str(tmp_path))
    for step in range(3):
        with writer.as_default():   # each exit flushes to disk
            tf.summary.scalar("v", float(step), step=step)
    assert sorted(_events(tmp_path), key=lambda e: e[1]) == [
        ("v", 0, 0.0), ("v", 1, 1.0), ("v", 2, 2.0)]
