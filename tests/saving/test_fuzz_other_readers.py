"""Fuzzing the readers other than model files (see test_fuzz_readers.py for
those): a dataset `.npz` with object arrays, a CIFAR pickle in its `.tar.gz`, a
word index, a text, a WAV and a PNG of a directory dataset, a `tf.train`
checkpoint folder (state file and shard), an export archive. Hypothesis
truncates them, flips bits, inflates a zip entry and writes hostile state-file
entries; each case is read by ONE worker process whose address space is capped
(`RLIMIT_AS`: its size after start-up plus `MEMORY_BOUND`) and must answer
within `TIME_BOUND` seconds, with a result or a ValueError (or a refused pickle)
that names the file. Derandomized; about 15 s of CPU (LOOPAX_FUZZ_EXAMPLES=2000 runs
more, drawn afresh)."""

import io
import json
import os
import pickle
import select
import subprocess
import sys
import tarfile
import textwrap
import wave
import zipfile
import zlib

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEMORY_BOUND = 512 * 2**20
TIME_BOUND = 10.0

WORKER = textwrap.dedent("""
    import json, os, resource, sys, warnings
    import numpy as np
    import loopax
    import loopax.tf as tf
    from loopax.src.datasets import cifar, dataset_files, imdb
    from loopax.src.utils import directory_datasets
    warnings.simplefilter("ignore")

    def read(kind, path):
        if kind == "npz":
            return dataset_files.load_npz(path, ("x_train", "y_train"), 64 * 2**20)
        if kind == "tar":
            return cifar._unpickle(path, "cifar-10-batches-py/data_batch_1")
        if kind == "json":
            return imdb.get_word_index(path)
        if kind == "txt":
            return directory_datasets.read_text(path, max_length=1000)
        if kind == "wav":
            return directory_datasets.read_wav(path, output_sequence_length=4000)
        if kind == "png":
            return directory_datasets.load_image(path, (8, 8), 3)
        if kind in ("state", "shard"):
            ckpt = tf.train.Checkpoint(v=tf.Variable(np.zeros((3,), "float32")))
            manager = tf.train.CheckpointManager(ckpt, os.path.dirname(path), max_to_keep=1)
            manager.restore_or_initialize()
            return manager.save()
        if kind == "export":
            reloaded = loopax.export.load(path)
            return reloaded.serve(np.zeros((2, 4), "float32"))

    for line in sys.argv[1:]:                          # warm up on the valid files
        kind, path = line.split("=", 1)
        read(kind, path)
    with open("/proc/self/status") as f:
        size = next(int(l.split()[1]) for l in f if l.startswith("VmSize")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size + %d, resource.RLIM_INFINITY))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            read(request["kind"], request["path"])
            answer = {"outcome": "loaded"}
        except BaseException as e:
            answer = {"outcome": "error", "type": type(e).__name__, "message": str(e)[:5000]}
        print(json.dumps(answer), flush=True)
""" % MEMORY_BOUND)


def _npz():
    x = np.empty(20, dtype=object)
    x[:] = [[int(w) for w in np.arange(i % 7 + 2)] for i in range(20)]
    buffer = io.BytesIO()
    np.savez_compressed(buffer, x_train=x, y_train=np.arange(20))
    return buffer.getvalue()


def _tar():
    batch = pickle.dumps({b"data": np.zeros((4, 3072), np.uint8), b"labels": [0, 1, 2, 3]})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_1")
        info.size = len(batch)
        archive.addfile(info, io.BytesIO(batch))
    return buffer.getvalue()


def _wav():
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(8000)
        f.writeframes(np.arange(2000, dtype="<i2").tobytes())
    return buffer.getvalue()


def _png():
    image = pytest.importorskip("PIL.Image")
    buffer = io.BytesIO()
    image.fromarray(np.arange(16 * 16 * 3, dtype=np.uint8).reshape(16, 16, 3)).save(buffer,
                                                                                    "PNG")
    return buffer.getvalue()


def _checkpoint_folder(folder):
    import loopax.tf as tf
    ckpt = tf.train.Checkpoint(v=tf.Variable(np.ones((3,), "float32")))
    tf.train.CheckpointManager(ckpt, str(folder), max_to_keep=1).save()
    return (folder / "checkpoint").read_bytes(), (folder / "ckpt-1.safetensors").read_bytes()


def _export(path):
    import loopax
    layer = loopax.layers.Dense(3)
    layer.build((None, 4))
    archive = loopax.export.ExportArchive()
    archive.track(layer)
    archive.add_endpoint("serve", layer.call, input_signature=[loopax.Input((4,))])
    archive.write_out(str(path))
    return path.read_bytes()


NAMES = {"npz": "data.npz", "tar": "cifar.tar.gz", "json": "index.json", "txt": "a.txt",
         "wav": "a.wav", "png": "a.png", "state": "checkpoint", "shard": "ckpt-1.safetensors",
         "export": "model.export"}


class ValidFiles(dict):
    def __repr__(self):
        return f"<{len(self)} valid files>"


@pytest.fixture(scope="module")
def valid_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("valid")
    state, shard = _checkpoint_folder(folder / "ckpts")
    files = {"npz": _npz(), "tar": _tar(), "json": json.dumps({"the": 1, "film": 2}).encode(),
             "txt": "café au lait".encode() * 20, "wav": _wav(), "png": _png(),
             "state": state, "shard": shard}
    if _has_flatbuffers():
        files["export"] = _export(folder / "model.export")
    return ValidFiles(files)


def _has_flatbuffers():
    try:
        import flatbuffers  # noqa: F401
        return True
    except ImportError:
        return False


def _place(folder, kind, data, valid_files):
    """Writes `data` as the file of `kind` in `folder` (a checkpoint file with its
    folder's other, valid file next to it); returns the path the worker reads."""
    folder.mkdir(parents=True, exist_ok=True)
    if kind in ("state", "shard"):
        other = "shard" if kind == "state" else "state"
        (folder / NAMES[other]).write_bytes(valid_files[other])
    path = folder / NAMES[kind]
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def worker(valid_files, tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm")
    args = []
    for kind, data in valid_files.items():
        args.append(f"{kind}={_place(folder / kind, kind, data, valid_files)}")
    process = subprocess.Popen([sys.executable, "-c", WORKER, *args], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": ROOT})
    assert json.loads(process.stdout.readline()) == {"ready": True}
    yield process
    process.kill()
    process.wait()


def ask(worker, kind, path):
    worker.stdin.write(json.dumps({"kind": kind, "path": str(path)}) + "\n")
    worker.stdin.flush()
    ready, _, _ = select.select([worker.stdout], [], [], TIME_BOUND)
    if not ready:
        worker.kill()
        pytest.fail(f"reading {path} took more than {TIME_BOUND} s")
    line = worker.stdout.readline()
    if not line:
        pytest.fail(f"the worker died reading {path} (exit {worker.wait()}): memory past "
                    "the bound or a crash")
    return json.loads(line)


def inflate(data, draw):
    """A zip whose one entry is replaced by 96 MiB (or less) of spaces, deflated."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        entries = [(info.filename, zf.read(info)) for info in zf.infolist()]
    victim = draw(st.sampled_from([n for n, _ in entries]))
    size = draw(st.sampled_from([2**20, 96 * 2**20]))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, payload in entries:
            zf.writestr(name, b" " * size if name == victim else payload)
    return out.getvalue()


HOSTILE_ENTRIES = ["../x", "/etc/passwd", "ckpt-1/../../x", "\udcff", "a" * 5000, ""]


@st.composite
def cases(draw, kinds):
    kind = draw(st.sampled_from(kinds))
    mutations = ["truncate", "flip"] + (["inflate"] if kind in ("npz", "export") else []) \
        + (["entry"] if kind == "state" else [])
    return kind, draw(st.sampled_from(mutations)), draw(st.data())


def mutate(data, kind, mutation, draw):
    if mutation == "truncate":
        return data[:draw(st.integers(0, len(data) - 1))]
    if mutation == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            out[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
        return bytes(out)
    if mutation == "inflate":
        return inflate(data, draw)
    entry = draw(st.sampled_from(HOSTILE_ENTRIES))          # a state-file entry
    field = draw(st.sampled_from(["model_checkpoint_path", "all_model_checkpoint_paths"]))
    return data + f'{field}: "{entry}"\n'.encode("utf-8", "surrogateescape")


EXAMPLES = int(os.environ.get("LOOPAX_FUZZ_EXAMPLES", "100"))
KINDS = sorted(NAMES)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES == 100, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=cases(KINDS))
def test_damaged_files_end_in_a_result_or_an_error_naming_the_file(valid_files, worker,
                                                                   tmp_path, case):
    kind, mutation, data = case
    if kind not in valid_files:
        return                                  # export without flatbuffers
    damaged = mutate(valid_files[kind], kind, mutation, data.draw)
    folder = tmp_path / f"case-{zlib.crc32(damaged):08x}-{kind}"
    path = _place(folder, kind, damaged, valid_files)
    answer = ask(worker, kind, path)
    if answer["outcome"] == "error":
        assert answer["type"] in ("ValueError", "UnpicklingError"), (kind, mutation, answer)
        where = str(folder) if kind in ("state", "shard") else str(path)
        assert where in answer["message"], (kind, mutation, answer)
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
