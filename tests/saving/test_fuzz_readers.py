"""Fuzzing the file readers: damaged and lying files end in a clear error that
names the file, or in a loaded model; never a hang, a raw traceback or memory
past a bound.

Hypothesis mutates four valid files (a loopax model file with optimizer state,
a loopax weights file, a Keras `.keras` and a Keras `.weights.h5`): truncations,
bit flips, lying safetensors headers, lying zip entry sizes and entries inflated
past their role. Every case is loaded by ONE worker process whose address space
is capped (`RLIMIT_AS`: its size after start-up plus `MEMORY_BOUND`), and each
load must answer within `TIME_BOUND` seconds. The cases are derandomized so CI
runs the same ones each time; about 10 s in all (LOOPAX_FUZZ_EXAMPLES=5000 runs
5000 new ones).
"""

import json
import os
import select
import struct
import subprocess
import sys
import textwrap
import zipfile
import zlib

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEMORY_BOUND = 512 * 2**20     # bytes a load may add to the worker's address space
TIME_BOUND = 10.0              # seconds a load may take (the models are tiny)

WORKER = textwrap.dedent("""
    import json, resource, sys, warnings
    import numpy as np
    import loopax
    warnings.simplefilter("ignore")

    def model():
        return loopax.Sequential([loopax.Input((8,)), loopax.layers.Dense(4)])

    def load(request):
        if request["kind"] == "model":
            return loopax.saving.load_model(request["path"])
        return model().load_weights(request["path"])

    for path in sys.argv[1:]:                          # warm up on the valid files
        load({"path": path, "kind": "model" if path.endswith(".keras") else "weights"})
    with open("/proc/self/status") as f:
        size = next(int(l.split()[1]) for l in f if l.startswith("VmSize")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size + %d, resource.RLIM_INFINITY))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            load(request)
            answer = {"outcome": "loaded"}
        except BaseException as e:
            answer = {"outcome": "error", "type": type(e).__name__, "message": str(e)[:5000],
                      "length": len(str(e))}
        print(json.dumps(answer), flush=True)
""" % MEMORY_BOUND)


# --------------------------------------------------------------------------
# Valid files
# --------------------------------------------------------------------------

KERAS_CONFIG = {
    "module": "keras", "class_name": "Sequential", "config": {"name": "s", "layers": [
        {"module": "keras.layers", "class_name": "InputLayer",
         "config": {"batch_shape": [None, 8], "dtype": "float32", "name": "input"}},
        {"module": "keras.layers", "class_name": "Dense",
         "config": {"name": "dense", "units": 4, "activation": "relu"}}]}}


def keras_weights_h5(path):
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f["layers/dense/vars/0"] = rng.normal(size=(8, 4)).astype(np.float32)
        f["layers/dense/vars/1"] = rng.normal(size=4).astype(np.float32)
        f.create_group("vars")


@pytest.fixture(scope="module")
def valid_files(tmp_path_factory):
    import loopax
    folder = tmp_path_factory.mktemp("valid")
    model = loopax.Sequential([loopax.Input((8,)), loopax.layers.Dense(4)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 8), np.float32), np.ones((4, 4), np.float32), verbose=0)
    model.save(folder / "loopax.keras")
    model.save_weights(folder / "loopax.weights.safetensors")
    keras_weights_h5(folder / "keras.weights.h5")
    with zipfile.ZipFile(folder / "keras.keras", "w") as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        zf.writestr("config.json", json.dumps(KERAS_CONFIG))
        zf.write(folder / "keras.weights.h5", "model.weights.h5")
    return ValidFiles({name: (folder / name).read_bytes() for name in
                       ["loopax.keras", "loopax.weights.safetensors", "keras.keras",
                        "keras.weights.h5"]})


class ValidFiles(dict):
    def __repr__(self):
        return f"<{len(self)} valid files>"


@pytest.fixture(scope="module")
def worker(valid_files, tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm")
    paths = []
    for name, data in valid_files.items():
        (folder / name).write_bytes(data)
        paths.append(str(folder / name))
    process = subprocess.Popen([sys.executable, "-c", WORKER, *paths], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": ROOT})
    assert json.loads(process.stdout.readline()) == {"ready": True}
    yield process
    process.kill()
    process.wait()


def ask(worker, path, kind):
    """The worker's answer for one load, or a failure if it takes too long."""
    worker.stdin.write(json.dumps({"path": str(path), "kind": kind}) + "\n")
    worker.stdin.flush()
    ready, _, _ = select.select([worker.stdout], [], [], TIME_BOUND)
    if not ready:
        worker.kill()
        pytest.fail(f"loading {path} took more than {TIME_BOUND} s")
    line = worker.stdout.readline()
    if not line:
        pytest.fail(f"the worker died loading {path} (exit {worker.wait()}): memory "
                    "past the bound or a crash")
    return json.loads(line)


# --------------------------------------------------------------------------
# Mutations
# --------------------------------------------------------------------------

def zip_entries(data):
    import io
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return [(info, zf.read(info.filename)) for info in zf.infolist()]


def rezip(entries, compression=zipfile.ZIP_DEFLATED):
    import io
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


def lie_in_safetensors(data, draw):
    """The safetensors bytes with one header field of one tensor replaced."""
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    key = draw(st.sampled_from(sorted(k for k in header if k != "__metadata__")))
    field = draw(st.sampled_from(["shape", "dtype", "data_offsets", "header_size"]))
    if field == "shape":
        header[key]["shape"] = draw(st.lists(st.integers(0, 2**40), max_size=3))
    elif field == "dtype":
        header[key]["dtype"] = draw(st.sampled_from(["F64", "I8", "BOOL", "F8_E4M3", "X"]))
    elif field == "data_offsets":
        header[key]["data_offsets"] = draw(st.lists(st.integers(0, 2**62), min_size=2,
                                                    max_size=2))
    text = json.dumps(header).encode()
    declared = draw(st.integers(0, 2**63)) if field == "header_size" else len(text)
    return struct.pack("<Q", declared) + text + data[8 + size:]


def lie_in_zip_sizes(data, draw):
    """The zip with one entry's declared sizes (local and central headers) changed."""
    entries = zip_entries(data)
    info, _ = entries[draw(st.integers(0, len(entries) - 1))]
    value = struct.pack("<I", draw(st.integers(0, 2**32 - 1)))
    out = bytearray(data)
    local = info.header_offset
    which = draw(st.sampled_from([18, 22]))     # compressed or uncompressed size
    out[local + which:local + which + 4] = value
    central = data.rfind(b"PK\x01\x02" + data[local + 4:local + 10])   # its directory record
    if central >= 0:
        out[central + which + 2:central + which + 6] = value
    return bytes(out)


def inflate_an_entry(data, draw):
    """The zip with one entry replaced by up to 96 MiB of spaces (a zip bomb)."""
    entries = [(info.filename, payload) for info, payload in zip_entries(data)]
    names = [name for name, _ in entries] + ["assets/unused.bin"]
    victim = draw(st.sampled_from(names))
    size = draw(st.sampled_from([2**20, 16 * 2**20, 96 * 2**20]))
    entries = [(n, p) for n, p in entries if n != victim] + [(victim, b" " * size)]
    return rezip(entries, zipfile.ZIP_BZIP2)


@st.composite
def damaged_files(draw):
    name = draw(st.sampled_from(["loopax.keras", "loopax.weights.safetensors", "keras.keras",
                                 "keras.weights.h5"]))
    is_zip = name.endswith(".keras")
    mutations = ["truncate", "flip"] + (["zip-sizes", "inflate"] if is_zip else []) + (
        ["header-lie"] if "loopax" in name else [])
    return name, draw(st.sampled_from(mutations)), draw(st.data())


def mutate(data, name, mutation, draw):
    if mutation == "truncate":
        return data[:draw(st.integers(0, len(data) - 1))]
    if mutation == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            out[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
        return bytes(out)
    if mutation == "zip-sizes":
        return lie_in_zip_sizes(data, draw)
    if mutation == "inflate":
        return inflate_an_entry(data, draw)
    if name.endswith(".safetensors"):                            # header-lie
        return lie_in_safetensors(data, draw)
    entries = [(info.filename, payload) for info, payload in zip_entries(data)]
    target = draw(st.sampled_from([n for n, _ in entries if n.endswith(".safetensors")]))
    return rezip([(n, lie_in_safetensors(p, draw) if n == target else p) for n, p in entries])


# Errors a damaged file may end in: ours name the file; FileNotFoundError is
# not expected (the file exists).
CLEAR_ERRORS = {"ValueError"}


# More cases, drawn afresh: LOOPAX_FUZZ_EXAMPLES=5000 python -m pytest tests/saving/test_fuzz...
EXAMPLES = int(os.environ.get("LOOPAX_FUZZ_EXAMPLES", "120"))


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES == 120, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=damaged_files())
def test_damaged_files_end_in_a_clear_error_or_a_model(valid_files, worker, tmp_path, case):
    name, mutation, data = case
    draw = data.draw
    damaged = mutate(valid_files[name], name, mutation, draw)
    path = tmp_path / f"case-{zlib.crc32(damaged):08x}-{name}"
    path.write_bytes(damaged)
    answer = ask(worker, path, "model" if name.endswith(".keras") else "weights")
    if answer["outcome"] == "error":
        assert answer["type"] in CLEAR_ERRORS, (mutation, answer)
        assert str(path) in answer["message"], (mutation, answer)
        assert answer["length"] < 5000, (mutation, answer["length"])
    path.unlink()
