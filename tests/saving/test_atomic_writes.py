"""Saves replace the file in one step: a unique temporary file per write in
the same directory, fsynced, then `os.replace`; removed when the write fails."""

import os
import threading

import numpy as np
import pytest

import loopax
from loopax.layers import Dense
from loopax.models import Sequential
from loopax.src.saving import model_file, weights_file


def small_model(value):
    model = Sequential([loopax.Input(shape=(64,)), Dense(64)])
    model.set_weights([np.full(w.shape, value, w.dtype) for w in model.get_weights()])
    return model


@pytest.mark.parametrize("save", ["save", "save_weights"])
def test_a_failing_write_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch, save):
    path = str(tmp_path / ("m.keras" if save == "save" else "m.weights.h5"))
    getattr(small_model(1.0), save)(path)
    before = open(path, "rb").read()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    def half_written(layout, stream):   # the weights' first bytes written, then the disk fills
        stream.write(layout.header)
        broken()
    if save == "save":
        monkeypatch.setattr(weights_file.SafetensorsLayout, "write", half_written)
    else:
        monkeypatch.setattr(os, "fsync", broken)                        # fails after writing
    with pytest.raises(OSError, match="disk full"):
        getattr(small_model(2.0), save)(path)
    assert os.listdir(tmp_path) == [os.path.basename(path)]
    assert open(path, "rb").read() == before


def test_the_saved_file_has_the_usual_permissions(tmp_path):
    path = str(tmp_path / "m.weights.h5")
    small_model(1.0).save_weights(path)
    reference = tmp_path / "plain"
    reference.write_bytes(b"")
    assert os.stat(path).st_mode == os.stat(reference).st_mode


def test_concurrent_writers_never_leave_a_torn_file(tmp_path):
    # With one shared `path + ".tmp"`, writers truncate each other's file and
    # crash on FileNotFoundError, and readers load half-written archives.
    path = str(tmp_path / "m.keras")
    models = [small_model(float(i)) for i in range(4)]
    models[0].save(path)
    errors, loaded, done = [], [], threading.Event()

    def write(model):
        try:
            for _ in range(15):
                model.save(path)
        except Exception as e:  # collected for the assertion
            errors.append(e)

    def read():
        while not done.is_set():
            try:
                weights = model_file.load_model(path, compile=False).get_weights()
                loaded.append(float(weights[0][0, 0]))
            except Exception as e:
                errors.append(e)

    writers = [threading.Thread(target=write, args=(m,)) for m in models]
    reader = threading.Thread(target=read)
    reader.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    reader.join()
    assert errors == []
    assert loaded and set(loaded) <= {0.0, 1.0, 2.0, 3.0}
    assert os.listdir(tmp_path) == ["m.keras"]
