"""A reader opens a path once and reads that one version of it (#34).

Another process keeps replacing one path (`os.replace`, as an atomic save does) with
files of four formats, each holding different weights for the same model, while this
process loads from the path in a loop. Every load must give exactly one of the
versions' weights: a reader that opens the path twice (once to tell the format, once
to read) meets two versions and fails or mixes them.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
import zipfile

import h5py
import numpy as np

import loopax
from loopax.layers import Dense

SHAPES = ((5, 4), (4,), (4, 2), (2,))


def mlp():
    return loopax.Sequential([loopax.Input((5,)), Dense(4, name="dense"),
                              Dense(2, name="dense_1")], name="sequential")


def weights(seed):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) for shape in SHAPES]


def keras_weights_h5(arrays) -> bytes:
    """Keras 3's `.weights.h5` layout for `mlp()`."""
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as h:
        h.create_group("vars")
        for i, layer in enumerate(["dense", "dense_1"]):
            group = h.create_group(f"layers/{layer}/vars")
            for j in range(2):
                group[str(j)] = arrays[2 * i + j]
    return buffer.getvalue()


def keras_archive(path, arrays):
    """A `.keras` file as Keras 3 writes it, for `mlp()`."""
    def dense(name, units):
        return {"module": "keras.layers", "class_name": "Dense", "registered_name": None,
                "config": {"name": name, "units": units}}
    config = {"module": "keras", "class_name": "Sequential", "registered_name": None,
              "config": {"name": "sequential", "layers": [
                  {"module": "keras.layers", "class_name": "InputLayer",
                   "registered_name": None,
                   "config": {"batch_shape": [None, 5], "dtype": "float32", "name": "in"}},
                  dense("dense", 4), dense("dense_1", 2)]}}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", keras_weights_h5(arrays))


def write_versions(folder):
    """{file: its weights}: a loopax archive, loopax weights (safetensors), a Keras
    `.weights.h5` and a Keras `.keras` archive, each with its own weights."""
    versions = {}
    model = mlp()
    for seed, kind in enumerate(["loopax_archive", "safetensors", "keras_h5",
                                 "keras_archive"]):
        arrays = weights(seed)
        path = str(folder / kind)
        if kind == "loopax_archive":
            model.set_weights(arrays)
            model.save(path + ".keras")
            os.rename(path + ".keras", path)
        elif kind == "safetensors":
            model.set_weights(arrays)
            model.save_weights(path)
        elif kind == "keras_h5":
            with open(path, "wb") as f:
                f.write(keras_weights_h5(arrays))
        else:
            keras_archive(path, arrays)
        versions[path] = arrays
    return versions


SWAPPER = textwrap.dedent("""
    import os, shutil, sys, time
    target, sources = sys.argv[1], sys.argv[2:]
    stop = time.monotonic() + 60
    while time.monotonic() < stop and not os.path.exists(target + ".stop"):
        for i, source in enumerate(sources):
            shutil.copyfile(source, f"{target}.tmp")
            os.replace(f"{target}.tmp", target)
""")


def load_while_swapped(tmp_path, sources, load, seconds=3.0):
    """Runs `load(path)` in a loop for `seconds` while a subprocess swaps `sources`
    in at `path`; returns (results, errors)."""
    target = str(tmp_path / "swapped")
    os.link(sources[0], target)
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, target, *sources])
    results, errors = [], []
    try:
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            try:
                results.append(load(target))
            except Exception as e:  # every failure is reported
                errors.append(f"{type(e).__name__}: {str(e)[:300]}")
    finally:
        open(target + ".stop", "w").close()
        swapper.wait(60)
    return results, errors


def which_version(arrays, versions):
    matches = [path for path, expected in versions.items()
               if all(np.array_equal(a, b) for a, b in zip(arrays, expected))]
    assert len(matches) == 1, "a load mixed two versions' weights"
    return os.path.basename(matches[0])


def test_load_weights_reads_one_version_of_a_path_being_replaced(tmp_path):
    versions = write_versions(tmp_path)
    model = mlp()

    def load(path):
        model.load_weights(path)
        return which_version(model.get_weights(), versions)

    results, errors = load_while_swapped(tmp_path, list(versions), load)
    assert errors == [], f"{len(errors)} of {len(results) + len(errors)} loads failed: " \
                         f"{sorted(set(errors))[:3]}"
    assert len(set(results)) >= 2, "the swapper never got a turn"


def test_load_model_reads_one_version_of_a_path_being_replaced(tmp_path):
    versions = {path: arrays for path, arrays in write_versions(tmp_path).items()
                if path.endswith("archive")}

    def load(path):
        return which_version(loopax.saving.load_model(path, compile=False).get_weights(),
                             versions)

    results, errors = load_while_swapped(tmp_path, list(versions), load)
    assert errors == [], f"{len(errors)} of {len(results) + len(errors)} loads failed: " \
                         f"{sorted(set(errors))[:3]}"
    assert len(set(results)) == 2
