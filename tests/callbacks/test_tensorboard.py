import glob
import os
import struct
import sys

import pytest
from tensorboardX.proto import event_pb2
from tensorboardX.record_writer import masked_crc32c

from loopax.callbacks import CallbackList, TensorBoard


def read_scalars(run_dir):
    """{tag: [(step, value)]} from the TFRecord-framed event files in `run_dir`."""
    scalars = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))):
        data = open(path, "rb").read()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset:offset + 8])
            (length_crc,) = struct.unpack("<I", data[offset + 8:offset + 12])
            assert length_crc == masked_crc32c(data[offset:offset + 8])
            record = data[offset + 12:offset + 12 + length]
            (record_crc,) = struct.unpack("<I", data[offset + 12 + length:offset + 16 + length])
            assert record_crc == masked_crc32c(record)
            offset += 16 + length
            event = event_pb2.Event.FromString(record)
            for value in event.summary.value:
                if value.HasField("histo"):
                    number = value.histo.sum
                elif value.HasField("simple_value"):
                    number = value.simple_value
                else:
                    number = value.tensor.float_val[0]
                scalars.setdefault(value.tag, []).append((event.step, pytest.approx(number)))
    return scalars


def test_epoch_scalars_in_train_and_validation_runs(fake_model, drive, tmp_path):
    fake_model.optimizer.learning_rate = 0.01
    callbacks = CallbackList([TensorBoard(tmp_path)], model=fake_model, epochs=2, steps=3,
                             verbose=0)
    drive(callbacks, fake_model, [{"loss": 0.5, "mae": 0.25, "val_loss": 0.75},
                                  {"loss": 0.375, "mae": 0.125, "val_loss": 0.625}], steps=3)
    assert sorted(os.listdir(tmp_path)) == ["train", "validation"]
    assert read_scalars(tmp_path / "train") == {
        "epoch_loss": [(0, 0.5), (1, 0.375)],
        "epoch_mae": [(0, 0.25), (1, 0.125)],
        "epoch_learning_rate": [(0, 0.01), (1, 0.01)]}
    assert read_scalars(tmp_path / "validation") == {"epoch_loss": [(0, 0.75), (1, 0.625)]}


def test_batch_scalars_every_n_steps_with_fused_jumps(fake_model, drive, tmp_path):
    callbacks = CallbackList([TensorBoard(tmp_path, update_freq=4)], model=fake_model, epochs=2,
                             steps=6, verbose=0)
    drive(callbacks, fake_model, [{"loss": 1.0}, {"loss": 2.0}], steps=6, per_execution=3,
          train_logs=lambda epoch, step: {"loss": 10 * epoch + step})
    # Executions end at global steps 3, 6, 9, 12; multiples of 4 are crossed at 6, 9 and 12.
    batch = read_scalars(tmp_path / "train")["batch_loss"]
    assert batch == [(6, 5.0), (9, 12.0), (12, 15.0)]


def test_weight_histograms(fake_model, drive, tmp_path):
    callbacks = CallbackList([TensorBoard(tmp_path, histogram_freq=2)], model=fake_model,
                             epochs=3, steps=1, verbose=0)
    drive(callbacks, fake_model, [{"loss": 1.0}] * 3, steps=1)
    # Each step adds 1 to the three weights: after epochs 1 and 3 they sum to 3 and 9.
    assert read_scalars(tmp_path / "train")["weight/histogram"] == [(0, 3.0), (2, 9.0)]


def test_evaluate_writes_against_iterations(fake_model, tmp_path):
    fake_model.optimizer.iterations = 42
    callbacks = CallbackList([TensorBoard(tmp_path)], model=fake_model, epochs=1, steps=1,
                             verbose=0)
    callbacks.on_test_begin()
    callbacks.on_test_end({"loss": 0.5})
    assert read_scalars(tmp_path / "validation") == {"evaluation_loss_vs_iterations": [(42, 0.5)]}


def test_epoch_mode_needs_no_batch_logs(tmp_path):
    from loopax.src.callbacks.callback import implements
    assert not implements(TensorBoard(tmp_path), "on_train_batch_end")
    assert implements(TensorBoard(tmp_path, update_freq="batch"), "on_train_batch_end")


def test_clear_errors(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="update_freq"):
        TensorBoard(tmp_path, update_freq=0)
    with pytest.raises(NotImplementedError, match="profile_batch"):
        TensorBoard(tmp_path, profile_batch=3)
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    import importlib.util
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install loopax\[tensorboard\]"):
        TensorBoard(tmp_path)
