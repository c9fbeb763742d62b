"""A model file whose config describes a model far larger than the weights it
holds is refused before the large weights are allocated (#34): loading builds
the model under the size of the file's weights entry.

The file-based cases load in a subprocess whose address space is capped at its
size after loading the valid files once plus `MEMORY_BOUND`, below the 1 GiB kernel the edited
config asks for: without the budget that process dies or raises MemoryError
while building; with it, the load ends in a ValueError naming the file.
"""

import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import loopax

h5py = pytest.importorskip("h5py")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEMORY_BOUND = 512 * 2**20
HUGE = 16384    # Dense(16384) on 16384 inputs: a 1 GiB float32 kernel

WORKER = textwrap.dedent("""
    import json, resource, sys, warnings
    import loopax
    warnings.simplefilter("ignore")
    for path in sys.argv[1:]:          # warm up (imports, compiles) on the valid files
        if "small" in path:
            loopax.saving.load_model(path)
    with open("/proc/self/status") as f:
        size = next(int(l.split()[1]) for l in f if l.startswith("VmSize")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size + %d, resource.RLIM_INFINITY))
    outcomes = []
    for path in sys.argv[1:]:
        try:
            loopax.saving.load_model(path)
            outcomes.append({"outcome": "loaded"})
        except BaseException as e:
            outcomes.append({"outcome": type(e).__name__, "message": str(e)})
    print(json.dumps(outcomes))
""" % MEMORY_BOUND)


def rewrite(path, target, edit):
    """`path`'s archive written to `target` with its config.json edited by `edit`."""
    with zipfile.ZipFile(path) as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    config = json.loads(entries["config.json"])
    edit(config)
    entries["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(target, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)


def widen_loopax(config):
    layers = config["config"]["layers"]
    layers[0]["config"]["batch_shape"] = [None, HUGE]
    layers[1]["config"]["units"] = HUGE
    layers[1]["build_config"]["input_shape"] = [None, HUGE]


def widen_keras(config):
    layers = config["config"]["layers"]
    layers[0]["config"]["batch_shape"] = [None, HUGE]
    layers[1]["config"]["units"] = HUGE


def keras_file(path):
    """A Keras 3 `.keras` archive of Input(8) -> Dense(4), written by hand as
    Keras 3.15.1 lays it out (config.json, metadata.json, model.weights.h5)."""
    config = {"module": "keras", "class_name": "Sequential", "config": {
        "name": "s", "layers": [
            {"module": "keras.layers", "class_name": "InputLayer",
             "config": {"batch_shape": [None, 8], "dtype": "float32", "name": "input"}},
            {"module": "keras.layers", "class_name": "Dense",
             "config": {"name": "dense", "units": 4, "activation": "relu"}}]}}
    weights = path.with_suffix(".h5")
    with h5py.File(weights, "w") as f:
        f["layers/dense/vars/0"] = np.ones((8, 4), np.float32)
        f["layers/dense/vars/1"] = np.zeros(4, np.float32)
        f.create_group("vars")
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        zf.writestr("config.json", json.dumps(config))
        zf.write(weights, "model.weights.h5")


def test_configs_larger_than_their_weights_are_refused_before_allocating(tmp_path):
    model = loopax.Sequential([loopax.Input((8,)), loopax.layers.Dense(4)])
    model.save(tmp_path / "small.keras")
    rewrite(tmp_path / "small.keras", tmp_path / "wide.keras", widen_loopax)
    keras_file(tmp_path / "keras_small.keras")
    rewrite(tmp_path / "keras_small.keras", tmp_path / "keras_wide.keras", widen_keras)
    paths = [tmp_path / name for name in
             ["small.keras", "wide.keras", "keras_small.keras", "keras_wide.keras"]]
    result = subprocess.run([sys.executable, "-c", WORKER, *map(str, paths)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    small, wide, keras_small, keras_wide = json.loads(result.stdout.strip().splitlines()[-1])
    assert small == {"outcome": "loaded"}
    assert keras_small == {"outcome": "loaded"}
    for outcome, path in [(wide, paths[1]), (keras_wide, paths[3])]:
        assert outcome["outcome"] == "ValueError", outcome
        assert str(path) in outcome["message"]
        assert "(16384, 16384)" in outcome["message"]
        assert "refused before allocating" in outcome["message"]


def test_a_checkpoint_folder_whose_config_outgrows_its_arrays_is_refused(monkeypatch):
    from loopax.src.saving import checkpoint_folders, model_file

    small = loopax.Sequential([loopax.Input((8,)), loopax.layers.Dense(4)])
    config = model_file.model_config(small)
    widen_loopax(config)
    arrays = {"weights/" + k: np.asarray(v) for k, v in
              [("dense/kernel", np.ones((8, 4), np.float32)),
               ("dense/bias", np.zeros(4, np.float32))]}
    monkeypatch.setattr(checkpoint_folders, "read_checkpoint",
                        lambda path: (arrays, {"config": config}, "/ckpt/7"))
    with pytest.raises(ValueError, match=r"/ckpt/7.*refused before allocating"):
        checkpoint_folders.load_model("/ckpt")


def test_the_budget_counts_every_weight_and_ends_with_its_scope():
    from loopax.src.utils import memory_utils

    with memory_utils.weight_budget(8 * 4 * 4 + 4 * 4, "the test's bound"):
        loopax.layers.Dense(4).build((None, 8))           # exactly the budget
        with pytest.raises(ValueError, match="'bias' of shape \\(1,\\).*test's bound"):
            loopax.layers.Dense(1, kernel_initializer="zeros").build((None, 0))
    loopax.layers.Dense(HUGE // 64).build((None, HUGE // 64))   # no budget outside
