"""The attacker rerun of issue #34: every hostile input of that round, each read by
loopax in a fresh process under a memory cap and a time limit, classified.

    PYTHONPATH=. python tools/hostile_inputs/run.py [-j 2] [-k SUBSTRING] [--json FILE]

Each case builds its files in its own folder (`<work>/cases/<name>/`), then a child
process imports loopax, caps its address space at its size then plus `--memory` MiB
(RLIMIT_AS), records through an audit hook every file it opens, removes or renames,
and runs the case's code. The outcome is one of:

- held:    a ValueError / FileNotFoundError / refused pickle whose message names the
           file (or folder, or argument) the case expects, or the correct result;
- unclear: an error of another kind (KeyError, struct.error, UnicodeDecodeError...),
           or one that names none of them;
- silent:  a result that is wrong, or a file outside the case's folder read or removed
           (the sentinel files in `<work>/outside/`);
- crash:   the process died, ran out of its memory cap, or ran past `--timeout`.

It prints one line a case and the summary "N held, N unclear, N silent, N crash".
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import io
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import wave
import zipfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(r"""
    import json, os, resource, sys, time, traceback, warnings
    spec = json.loads(sys.argv[1])
    import numpy as np
    import loopax
    import loopax as keras
    import loopax.tf as tf
    import jax, jax.numpy as jnp
    jax.jit(lambda v: v + 1)(jnp.ones(3)).block_until_ready()   # JAX's pools: ~1 GB mapped
    warm = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
    warm.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    warm.fit(np.zeros((4, 2), "float32"), np.zeros(4, "int32"), verbose=0)
    for line in spec["warmup"]:
        exec(line, {"np": np, "keras": keras, "tf": tf, "loopax": loopax})
    with open("/proc/self/status") as f:
        size = next(int(l.split()[1]) for l in f if l.startswith("VmSize")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size + spec["memory"], resource.RLIM_INFINITY))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outside = os.path.realpath(spec["outside"])
    touched = []

    def audit(event, args):
        if event in ("open", "os.remove", "os.rename", "os.rmdir", "shutil.rmtree",
                     "os.truncate", "os.chmod", "shutil.move", "shutil.copyfile"):
            for arg in args[:2]:
                if isinstance(arg, (str, bytes, os.PathLike)):
                    try:
                        path = os.path.realpath(os.fsdecode(arg))
                    except Exception:
                        continue
                    if path == outside or path.startswith(outside + os.sep):
                        touched.append(f"{event} {path}")
    sys.addaudithook(audit)
    print("READY", flush=True)
    scope = {"np": np, "keras": keras, "tf": tf, "loopax": loopax, "os": os,
             "D": spec["folder"], "OUT": spec["outside"]}
    answer = {}
    start = time.time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec(spec["code"], scope)
            answer["outcome"] = "result"
            scope["warned"] = [str(w.message) for w in caught]
            if spec["check"]:
                answer["correct"] = bool(eval(spec["check"], scope))
        except BaseException as e:
            frames = traceback.extract_tb(e.__traceback__)
            answer.update(outcome="error", type=type(e).__name__, message=str(e)[:2000],
                          where=f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}",
                          error_classes=[c.__name__ for c in type(e).__mro__])
    answer["warnings"] = [str(w.message)[:500] for w in caught][:5]
    answer["seconds"] = round(time.time() - start, 2)
    answer["rss_growth_mib"] = round(
        (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024, 1)
    answer["touched"] = touched[:5]
    print("ANSWER " + json.dumps(answer), flush=True)
""")

CLEAR_ERRORS = {"ValueError", "FileNotFoundError", "UnpicklingError"}
RAW_ERRORS = {"UnicodeError", "JSONDecodeError", "MemoryError", "RecursionError",
              "KeyError", "AttributeError", "TypeError", "IndexError"}


# ---------------------------------------------------------------- the files ---------

def npy(array) -> bytes:
    buffer = io.BytesIO()
    import numpy as np
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def bomb_zip(path, member, gib, others=None):
    """A zip whose `member` is an uint8 .npy of `gib` GiB of zeros, deflated (MBs)."""
    size = int(gib * 2**30)
    header = _npy_header(size)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open(member, "w", force_zip64=True) as f:
            f.write(header)
            chunk = bytes(64 * 2**20)
            left = size
            while left:
                f.write(chunk[:min(left, len(chunk))])
                left -= min(left, len(chunk))
        for name, data in (others or {}).items():
            zf.writestr(name, data)
    return path


def _npy_header(n):
    text = "{'descr': '|u1', 'fortran_order': False, 'shape': (%d,), }" % n
    text += " " * (-(len(text) + 11) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode()


def declare_huge(path, member_index=0):
    """Edits the central directory so the first member declares 0xFFFFFFFE bytes."""
    data = bytearray(path.read_bytes())
    at = -1
    for _ in range(member_index + 1):
        at = data.index(b"PK\x01\x02", at + 1)
    data[at + 24:at + 28] = struct.pack("<I", 0xFFFFFFFE)
    path.write_bytes(bytes(data))
    return path


def wav(path, frames, channels=1, declared=None):
    import numpy as np
    with wave.open(str(path), "wb") as f:
        f.setnchannels(channels)
        f.setsampwidth(2)
        f.setframerate(8000)
        f.writeframes(np.arange(frames * channels, dtype="<i2").tobytes())
    if declared is not None:
        data = bytearray(path.read_bytes())
        at = data.index(b"data") + 4
        data[at:at + 4] = struct.pack("<I", declared)
        path.write_bytes(bytes(data))
    return path


def png_header(path, width, height):
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
                     + chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + chunk(b"IEND", b""))
    return path


def png(path, size=16):
    import numpy as np
    from PIL import Image
    Image.fromarray(np.full((size, size, 3), 100, np.uint8)).save(path, "PNG")
    return path


def png_bomb(path):
    """A real PNG of 13,000 x 13,000 black pixels that deflates to a few hundred kB."""
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    width = height = 13_000
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)   # greyscale
    compressor = zlib.compressobj(9)
    row = b"\x00" * (width + 1)
    body = b"".join(compressor.compress(row * 100) for _ in range(height // 100))
    body += compressor.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body)
                     + chunk(b"IEND", b""))
    return path


def tar(path, members, mode="w:gz"):
    """members: (name, kind, payload); kind file / symlink / hardlink / fifo / device."""
    with tarfile.open(path, mode) as archive:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(payload)
                archive.addfile(info, io.BytesIO(payload))
                continue
            info.type = {"symlink": tarfile.SYMTYPE, "fifo": tarfile.FIFOTYPE,
                         "hardlink": tarfile.LNKTYPE, "device": tarfile.CHRTYPE}[kind]
            info.linkname = payload or ""
            archive.addfile(info)
    return path


def tar_declaring(path, name, size):
    """A .tar.gz whose one member declares `size` bytes (written as zeros, streamed)."""
    class Zeros(io.RawIOBase):
        def __init__(self, n):
            self.left = n

        def readinto(self, b):
            n = min(len(b), self.left)
            b[:n] = bytes(n)
            self.left -= n
            return n

        def readable(self):
            return True
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        info = tarfile.TarInfo(name)
        info.size = size
        archive.addfile(info, io.BufferedReader(Zeros(size), 2**22))
    return path


def cifar_tar(path, payload, member="cifar-10-batches-py/data_batch_1"):
    return tar(path, [(member, "file", payload)])


class _Reduce:
    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def sparse(path, size, content=b""):
    with open(path, "wb") as f:
        f.write(content)
        f.truncate(size)
    return path


def _write_zip(path, entries, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


# ---------------------------------------------------------------- the base ----------

class Base:
    """Valid files built once (in this process) that cases damage."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        import numpy as np
        os.environ.setdefault("LOOPAX_COMPILATION_CACHE", "0")
        import loopax
        import loopax.tf as tf
        ckpts = folder / "ckpts"
        ckpt = tf.train.Checkpoint(v=tf.Variable(np.ones((3,), "float32")))
        tf.train.CheckpointManager(ckpt, str(ckpts), max_to_keep=1).save()
        self.state = (ckpts / "checkpoint").read_bytes()
        self.shard = (ckpts / "ckpt-1.safetensors").read_bytes()
        layer = loopax.layers.Dense(3)
        layer.build((None, 4))
        archive = loopax.export.ExportArchive()
        archive.track(layer)
        archive.add_endpoint("serve", layer.call, input_signature=[loopax.Input((4,))])
        archive.write_out(str(folder / "good.export"))
        with zipfile.ZipFile(folder / "good.export") as zf:
            self.export = {name: zf.read(name) for name in zf.namelist()}
        model = loopax.Sequential([loopax.Input((8,)), loopax.layers.Dense(4)])
        model.save(folder / "small.keras")
        model.save_weights(folder / "small.weights.h5")
        with zipfile.ZipFile(folder / "small.keras") as zf:
            self.keras_file = {name: zf.read(name) for name in zf.namelist()}
        self.keras3_file = _keras3_file(folder / "keras3.keras")


def _keras3_file(path):
    """A Keras 3 `.keras` of Input(8) -> Dense(4) laid out as Keras 3.15.1 writes it."""
    import h5py
    import numpy as np
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
    entries = {"metadata.json": json.dumps({"keras_version": "3.15.1"}).encode(),
               "config.json": json.dumps(config).encode(), "model.weights.h5":
               weights.read_bytes()}
    _write_zip(path, entries)
    return entries


# ---------------------------------------------------------------- the cases ---------

CASES: dict[str, dict] = {}


def case(name, group, names, code, check=None, warmup=()):
    """Registers a case: `build(folder, base, outside)` makes its files; `code` runs in
    the child with D (the case's folder), OUT (the outside folder) and loopax as keras
    and tf; `check`, an expression on `result` (and `warned`), is the correct result;
    an error must name one of `names` (str.format'ed with D)."""
    def register(build):
        CASES[name] = dict(name=name, group=group, names=names, code=textwrap.dedent(code),
                           check=check, build=build, warmup=list(warmup))
        return build
    return register


def _state_file(folder, *entries):
    lines = [f'model_checkpoint_path: "{entries[-1]}"']
    lines += [f'all_model_checkpoint_paths: "{e}"' for e in entries]
    (folder / "checkpoint").write_text("\n".join(lines) + "\n")


MANAGER_SAVE = """
ckpt = tf.train.Checkpoint(v=tf.Variable(np.zeros((3,), "float32")))
manager = tf.train.CheckpointManager(ckpt, D, max_to_keep=1)
manager.save(); manager.save()
result = sorted(os.listdir(D))
"""
RESTORE = """
ckpt = tf.train.Checkpoint(v=tf.Variable(np.zeros((3,), "float32")))
manager = tf.train.CheckpointManager(ckpt, D, max_to_keep=1)
manager.restore_or_initialize()
result = np.asarray(ckpt.v.value)
"""
LATEST = "result = tf.train.latest_checkpoint(D)"
WARM_CKPT = ["ckpt = tf.train.Checkpoint(v=tf.Variable(np.zeros((3,), 'float32')))"]

# item 1: state files naming other folders -----------------------------------------
for kind, entry in [("absolute", "{OUT}/ckpts/x"), ("dotdot", "../../outside/ckpts/x"),
                    ("symlink", "link/x")]:
    for action, code in [("save", MANAGER_SAVE), ("restore", RESTORE), ("latest", LATEST)]:
        def build(folder, base, outside, entry=entry, kind=kind):
            if kind == "symlink":
                os.symlink(outside / "ckpts", folder / "link")
            _state_file(folder, entry.format(OUT=outside))
        case(f"state-{kind}-{action}", 1, ["{D}/checkpoint"], code, warmup=WARM_CKPT)(build)


@case("state-absolute-inside-restores", 1, [], RESTORE, check="list(result) == [1, 1, 1]")
def _(folder, base, outside):
    (folder / "ckpt-1.safetensors").write_bytes(base.shard)
    _state_file(folder, str(folder / "ckpt-1"))      # as TensorFlow writes them


# item 3: FIFOs and devices in place of each file a reader opens ------------------------
def _fifo(folder, name):
    os.mkfifo(folder / name)


def _zero(folder, name):
    os.symlink("/dev/zero", folder / name)


READERS = {   # name: (file, code, also write the valid checkpoint files around it)
    "ckpt-state": ("checkpoint", RESTORE),
    "ckpt-shard": ("ckpt-1.safetensors", RESTORE),
    "list-variables": ("ckpt-1.safetensors", "result = tf.train.list_variables(D + '/ckpt-1')"),
    "mnist": ("mnist.npz", "result = keras.datasets.mnist.load_data(D + '/mnist.npz')"),
    "imdb": ("imdb.npz", "result = keras.datasets.imdb.load_data(D + '/imdb.npz')"),
    "word-index": ("index.json", "result = keras.datasets.imdb.get_word_index(D + "
                                 "'/index.json')"),
    "cifar": ("cifar.tar.gz", "result = keras.datasets.cifar10.load_data(D + "
                              "'/cifar.tar.gz')"),
    "boston": ("boston.npz", "result = keras.datasets.boston_housing.load_data(D + "
                             "'/boston.npz')"),
    "export": ("a.export", "result = keras.export.load(D + '/a.export')"),
    "keras-file": ("a.keras", "result = keras.saving.load_model(D + '/a.keras')"),
    "weights-h5": ("a.weights.h5", """
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
        result = model.load_weights(D + '/a.weights.h5')"""),
    "text-dataset": ("t/a/1.txt", """
        ds = keras.utils.text_dataset_from_directory(D + '/t', max_length=100, batch_size=2)
        result = [b for b in ds]"""),
    "vocabulary": ("vocab.txt", "result = keras.layers.StringLookup(vocabulary=D + "
                                "'/vocab.txt')"),
    "image-dataset": ("i/a/1.png", """
        ds = keras.utils.image_dataset_from_directory(D + '/i', image_size=(8, 8))
        result = [b for b in ds]"""),
    "audio-dataset": ("w/a/1.wav", """
        ds = keras.utils.audio_dataset_from_directory(D + '/w', output_sequence_length=100)
        result = [b for b in ds]"""),
    "load-img": ("a.png", "result = keras.utils.load_img(D + '/a.png')"),
}
for reader, (file, code) in READERS.items():
    for kind, make in [("fifo", _fifo), ("dev-zero", _zero)]:
        def build(folder, base, outside, file=file, make=make, reader=reader):
            (folder / file).parent.mkdir(parents=True, exist_ok=True)
            if reader.startswith(("ckpt", "list")):
                (folder / "ckpt-1.safetensors").write_bytes(base.shard)
                (folder / "checkpoint").write_bytes(base.state)
                os.remove(folder / file)
            make(folder, file)
        warm = WARM_CKPT if reader.startswith("ckpt") else ()
        case(f"{kind}-{reader}", 3, [os.path.basename(file)], code, warmup=warm)(build)


@case("fifo-get-file-cached", 3, ["f.bin"], """
    import hashlib
    result = keras.utils.get_file('f.bin', 'file://' + D + '/src/f.bin', cache_dir=D + '/c',
                                  file_hash=hashlib.sha256(b'abc').hexdigest())""")
def _(folder, base, outside):
    (folder / "c" / "datasets").mkdir(parents=True)
    os.mkfifo(folder / "c" / "datasets" / "f.bin")
    (folder / "src").mkdir()
    (folder / "src" / "f.bin").write_bytes(b"abc")


# item 2: memory bombs ---------------------------------------------------------------
@case("mnist-npz-inflates-to-3gb", 2, ["mnist.npz"],
      "result = keras.datasets.mnist.load_data(D + '/mnist.npz')")
def _(folder, base, outside):
    import numpy as np
    small = {f"{k}.npy": npy(np.zeros(1, np.uint8)) for k in ("y_train", "x_test", "y_test")}
    bomb_zip(folder / "mnist.npz", "x_train.npy", 3, small)


for loader, file, member, others, code in [
    ("imdb", "imdb.npz", "x_train.npy", ("y_train", "x_test", "y_test"),
     "result = keras.datasets.imdb.load_data(D + '/imdb.npz')"),
    ("reuters", "reuters.npz", "x.npy", ("y",),
     "result = keras.datasets.reuters.load_data(D + '/reuters.npz')"),
    ("boston", "boston.npz", "x.npy", ("y",),
     "result = keras.datasets.boston_housing.load_data(D + '/boston.npz')"),
    ("california", "california.npz", "x.npy", ("y",),
     "result = keras.datasets.california_housing.load_data(path=D + '/california.npz')"),
]:
    def build(folder, base, outside, file=file, member=member, others=others):
        import numpy as np
        small = {f"{k}.npy": npy(np.zeros(1, np.uint8)) for k in others}
        bomb_zip(folder / file, member, 1, small)
    case(f"{loader}-npz-inflates-to-1gib", 2, [file], code)(build)

    def build_huge(folder, base, outside, file=file, member=member, others=others):
        import numpy as np
        entries = {member: b"\x93NUMPY"}
        entries.update({f"{k}.npy": npy(np.zeros(1, np.uint8)) for k in others})
        _write_zip(folder / file, entries)
        declare_huge(folder / file)
    case(f"{loader}-npz-declares-931-gib", 5, [file], code)(build_huge)


@case("export-variables-npz-inflates-to-1gib", 2, ["a.export"],
      "result = keras.export.load(D + '/a.export')")
def _(folder, base, outside):
    bomb_zip(folder / "v.npz", "v0.npy", 1)
    _write_zip(folder / "a.export", dict(base.export, **{"variables.npz":
                                                         (folder / "v.npz").read_bytes()}))
    os.remove(folder / "v.npz")


@case("export-member-inflates-to-1gib", 2, ["a.export"],
      "result = keras.export.load(D + '/a.export')")
def _(folder, base, outside):
    with zipfile.ZipFile(folder / "a.export", "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in base.export.items():
            if name != "manifest.json":
                zf.writestr(name, data)
        with zf.open("manifest.json", "w", force_zip64=True) as f:
            f.write(b"{" + b" " * 2**20)
            spaces = b" " * (64 * 2**20)
            for _ in range(16):
                f.write(spaces)


for loader in ("imdb", "reuters"):
    x_key = "x_train" if loader == "imdb" else "x"

    def build(folder, base, outside, loader=loader, x_key=x_key):
        import numpy as np
        shared = list(range(1000))
        x = np.empty(20_000, dtype=object)
        for i in range(20_000):
            x[i] = shared
        arrays = {x_key: x, x_key.replace("x", "y"): np.zeros(20_000, int)}
        if loader == "imdb":
            arrays.update(x_test=x[:1], y_test=np.zeros(1, int))
        np.savez(folder / f"{loader}.npz", **arrays)
    case(f"{loader}-object-array-20000-references", 2, [f"{loader}.npz"],
         f"result = keras.datasets.{loader}.load_data(D + '/{loader}.npz')")(build)


@case("cifar-pickle-unzips-to-3gb", 2, ["cifar.tar.gz"],
      "result = keras.datasets.cifar10.load_data(D + '/cifar.tar.gz')")
def _(folder, base, outside):
    tar_declaring(folder / "cifar.tar.gz", "cifar-10-batches-py/data_batch_1", 3 * 2**30)


@case("cifar-pickle-allocates-huge-array", 2, ["cifar.tar.gz"],
      "result = keras.datasets.cifar10.load_data(D + '/cifar.tar.gz')")
def _(folder, base, outside):
    import numpy as np
    payload = pickle.dumps({b"data": _Reduce(np.zeros, ((2**17, 2**17), np.uint8)),
                            b"labels": [0]})
    cifar_tar(folder / "cifar.tar.gz", payload)


@case("cifar-pickle-repeats-bytes", 2, ["cifar.tar.gz"],
      "result = keras.datasets.cifar10.load_data(D + '/cifar.tar.gz')")
def _(folder, base, outside):
    # a list of 10,000 references to one 1 MiB bytes: 10 GiB if copied
    blob = b"x" * 2**20
    payload = pickle.dumps({b"data": [blob] * 10_000, b"labels": [0]})
    cifar_tar(folder / "cifar.tar.gz", payload)


@case("fashion-mnist-gz-bomb", 2, ["train-images-idx3-ubyte.gz"],
      "result = keras.datasets.fashion_mnist.load_data(D)")
def _(folder, base, outside):
    import gzip
    for name in ("train-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
                 "t10k-images-idx3-ubyte.gz"):
        with gzip.open(folder / name, "wb") as f:
            f.write(bytes(16))
    with gzip.open(folder / "train-images-idx3-ubyte.gz", "wb", compresslevel=9) as f:
        chunk = bytes(64 * 2**20)
        for _ in range(32):
            f.write(chunk)


@case("text-3gb-with-max-length", 2, [], """
    ds = keras.utils.text_dataset_from_directory(D + '/t', max_length=100, batch_size=2)
    result = [b for b in ds]""", check="result[0][0].numpy()[0] == b'a' * 100")
def _(folder, base, outside):
    (folder / "t" / "a").mkdir(parents=True)
    sparse(folder / "t" / "a" / "1.txt", 3 * 2**30, b"a" * 200)


@case("text-3gb-without-max-length", 2, ["1.txt"], """
    ds = keras.utils.text_dataset_from_directory(D + '/t', batch_size=2)
    result = [b for b in ds]""")
def _(folder, base, outside):
    (folder / "t" / "a").mkdir(parents=True)
    sparse(folder / "t" / "a" / "1.txt", 3 * 2**30, b"a" * 200)


@case("text-dev-zero-with-max-length", 2, ["1.txt"], """
    ds = keras.utils.text_dataset_from_directory(D + '/t', max_length=100, batch_size=2)
    result = [b for b in ds]""")
def _(folder, base, outside):
    (folder / "t" / "a").mkdir(parents=True)
    os.symlink("/dev/zero", folder / "t" / "a" / "1.txt")


@case("wav-declares-2gb-with-length", 2, [], """
    ds = keras.utils.audio_dataset_from_directory(D + '/w', output_sequence_length=100)
    result = [b for b in ds]""", check="result[0][0].shape == (1, 100, 1)")
def _(folder, base, outside):
    (folder / "w" / "a").mkdir(parents=True)
    wav(folder / "w" / "a" / "1.wav", 1000, declared=2**31 - 2)


@case("wav-declares-2gb-without-length", 2, ["1.wav"], """
    ds = keras.utils.audio_dataset_from_directory(D + '/w')
    result = [b for b in ds]""")
def _(folder, base, outside):
    (folder / "w" / "a").mkdir(parents=True)
    wav(folder / "w" / "a" / "1.wav", 1000, declared=2**31 - 2)


@case("wav-65535-channels", 2, ["1.wav"], """
    ds = keras.utils.audio_dataset_from_directory(D + '/w', output_sequence_length=100)
    result = [b for b in ds]""")
def _(folder, base, outside):
    (folder / "w" / "a").mkdir(parents=True)
    path = wav(folder / "w" / "a" / "1.wav", 100)
    data = bytearray(path.read_bytes())
    at = data.index(b"fmt ") + 10
    data[at:at + 2] = struct.pack("<H", 65535)
    path.write_bytes(bytes(data))


for where, code in [("image-dataset", """
    ds = keras.utils.image_dataset_from_directory(D + '/i', image_size=(8, 8))
    result = [b for b in ds]"""), ("load-img", "result = keras.utils.load_img(D + '/i/a/1.png')")]:
    def build(folder, base, outside):
        (folder / "i" / "a").mkdir(parents=True)
        png_header(folder / "i" / "a" / "1.png", 13_000, 13_000)
    case(f"png-declares-13000-squared-{where}", 2, ["1.png"], code)(build)

    def build_real(folder, base, outside):
        (folder / "i" / "a").mkdir(parents=True)
        png_bomb(folder / "i" / "a" / "1.png")
    case(f"png-13000-squared-real-{where}", 2, ["1.png"], code)(build_real)


@case("ckpt-shard-declares-huge-header", 2, ["ckpt-1.safetensors"], RESTORE, warmup=WARM_CKPT)
def _(folder, base, outside):
    (folder / "checkpoint").write_bytes(base.state)
    (folder / "ckpt-1.safetensors").write_bytes(struct.pack("<Q", 2**40) + base.shard[8:])


@case("ckpt-shard-declares-huge-array", 2, ["ckpt-1.safetensors"], RESTORE, warmup=WARM_CKPT)
def _(folder, base, outside):
    (folder / "checkpoint").write_bytes(base.state)
    n = struct.unpack("<Q", base.shard[:8])[0]
    header = json.loads(base.shard[8:8 + n])
    for key, value in header.items():
        if isinstance(value, dict) and "shape" in value:
            value["shape"] = [2**31]
            value["data_offsets"] = [0, 4 * 2**31]
    body = json.dumps(header).encode()
    (folder / "ckpt-1.safetensors").write_bytes(struct.pack("<Q", len(body)) + body
                                                + base.shard[8 + n:])


@case("ckpt-shard-3gb-sparse", 2, ["ckpt-1.safetensors"], RESTORE, warmup=WARM_CKPT)
def _(folder, base, outside):
    (folder / "checkpoint").write_bytes(base.state)
    sparse(folder / "ckpt-1.safetensors", 3 * 2**30, base.shard)


@case("ckpt-state-1gib-sparse", 2, ["checkpoint"], RESTORE, warmup=WARM_CKPT)
def _(folder, base, outside):
    (folder / "ckpt-1.safetensors").write_bytes(base.shard)
    sparse(folder / "checkpoint", 2**30, base.state)


@case("word-index-1gib-sparse", 2, ["index.json"],
      "result = keras.datasets.imdb.get_word_index(D + '/index.json')")
def _(folder, base, outside):
    sparse(folder / "index.json", 2**30, b'{"a": 1')


@case("vocabulary-1gib-sparse", 2, ["vocab.txt"],
      "result = keras.layers.StringLookup(vocabulary=D + '/vocab.txt')")
def _(folder, base, outside):
    sparse(folder / "vocab.txt", 2**30, b"a\nb\n")


@case("keras-file-config-declares-256mb-kernel", 6, ["a.keras"],
      "result = keras.saving.load_model(D + '/a.keras')")
def _(folder, base, outside):
    config = json.loads(base.keras_file["config.json"])
    layers = config["config"]["layers"]
    layers[0]["config"]["batch_shape"] = [None, 8192]
    layers[1]["config"]["units"] = 8192
    layers[1]["build_config"]["input_shape"] = [None, 8192]
    _write_zip(folder / "a.keras", dict(base.keras_file,
                                        **{"config.json": json.dumps(config).encode()}))


@case("keras3-file-config-declares-256mb-kernel", 6, ["a.keras"],
      "result = keras.saving.load_model(D + '/a.keras')")
def _(folder, base, outside):
    config = json.loads(base.keras3_file["config.json"])
    layers = config["config"]["layers"]
    layers[0]["config"]["batch_shape"] = [None, 8192]
    layers[1]["config"]["units"] = 8192
    _write_zip(folder / "a.keras", dict(base.keras3_file,
                                        **{"config.json": json.dumps(config).encode()}))


# item 4: silent ---------------------------------------------------------------------
FIT_SPARSE = """
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
x = np.zeros((4, 2), "float32")
"""


@case("sparse-label-2**40-arrays", 4, ["label", "2**40", "1099511627776"], FIT_SPARSE + """
y = np.array([0, 1, 2**40, 2], np.int64)
result = model.fit(x, y, epochs=1, verbose=0)""")
def _(folder, base, outside):
    pass


@case("sparse-label-2**40-generator", 4, ["label", "2**40", "1099511627776"], FIT_SPARSE + """
def batches():
    while True:
        yield x, np.array([0, 1, 2**40, 2], np.int64)
result = model.fit(batches(), steps_per_epoch=2, epochs=1, verbose=0)""")
def _(folder, base, outside):
    pass


@case("sparse-label-2**40-dataset", 4, ["label", "2**40", "1099511627776"], FIT_SPARSE + """
ds = tf.data.Dataset.from_tensor_slices((x, np.array([0, 1, 2**40, 2], np.int64))).batch(2)
result = model.fit(ds, epochs=1, verbose=0)""", check="any('1099511627776' in w for w in warned)")
def _(folder, base, outside):
    pass


@case("follow-links-symlink-loop", 4, [], """
ds = keras.utils.text_dataset_from_directory(D + '/t', follow_links=True, shuffle=False,
                                             batch_size=None)
result = sorted(os.path.relpath(p, D + '/t') for p in ds.file_paths)""",
      check="result == ['a/also_b/x.txt', 'a/x.txt', 'b/x.txt']")
def _(folder, base, outside):
    root = folder / "t"
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        (root / name / "x.txt").write_text(name)
    os.symlink(root, root / "a" / "loop")
    os.symlink(root / "b", root / "a" / "also_b")
    os.symlink(root / "a", root / "a" / "self")


@case("follow-links-link-out", 4, [], """
ds = keras.utils.text_dataset_from_directory(D + '/t', follow_links=False, shuffle=False,
                                             batch_size=None)
result = sorted(os.path.relpath(p, D + '/t') for p in ds.file_paths)""",
      check="result == ['a/x.txt']")
def _(folder, base, outside):
    (folder / "t" / "a").mkdir(parents=True)
    (folder / "t" / "a" / "x.txt").write_text("a")
    os.symlink(outside, folder / "t" / "a" / "out")


@case("latin1-text", 4, [], """
ds = keras.utils.text_dataset_from_directory(D + '/t', batch_size=2, shuffle=False,
                                             labels=None)
result = [list(b.numpy()) for b in ds]""", check="result == [[b'caf\\xe9', b'th\\xc3\\xa9']]")
def _(folder, base, outside):
    (folder / "t" / "a").mkdir(parents=True)
    (folder / "t" / "a" / "1.txt").write_bytes(b"caf\xe9")
    (folder / "t" / "a" / "2.txt").write_bytes("thé".encode())


CACHE_RUN = """
import subprocess, sys
env = dict(os.environ, LOOPAX_COMPILATION_CACHE=D + '/jax')
def run(expr):
    code = ('import warnings; warnings.simplefilter("always"); import jax, jax.numpy as jnp, '
            'loopax; print(float(jax.jit(lambda x: ' + expr + ')(jnp.float32(2.0))))')
    done = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True,
                          text=True, timeout=120)
    return done.stdout.split()[-1], done.stderr
"""


def _swap_entries(folder, mode):
    """Fills `folder/jax` with x + 1's and x * 3's programs, x * 3's under x + 1's name."""
    cache = folder / "jax"
    cache.mkdir(mode=0o700)
    env = dict(os.environ, LOOPAX_COMPILATION_CACHE=str(cache), PYTHONPATH=str(ROOT))
    before = set()
    names = {}
    for expr in ("x + 1", "x * 3"):
        code = ("import jax, jax.numpy as jnp, loopax; "
                f"print(float(jax.jit(lambda x: {expr})(jnp.float32(2.0))))")
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        now = {p.name for p in cache.iterdir() if p.name.endswith("-cache")}
        names[expr] = sorted(now - before)
        before = now
    plus, times = names["x + 1"], names["x * 3"]
    # the jit programs: the entries each run added (the same count, in key order)
    for a, b in zip(plus, times):
        shutil.copyfile(cache / b, cache / a)
    os.chmod(cache, mode)


@case("compilation-cache-swapped-entry-world-writable", 4, [], CACHE_RUN + """
result, stderr = run('x + 1')""", check="result == '3.0'")
def _(folder, base, outside):
    _swap_entries(folder, 0o777)


@case("compilation-cache-swapped-entry-group-writable", 4, [], CACHE_RUN + """
result, stderr = run('x + 1')""", check="result == '3.0'")
def _(folder, base, outside):
    _swap_entries(folder, 0o770)


@case("compilation-cache-fifo-entry", 3, [], CACHE_RUN + """
result, stderr = run('x + 1')""", check="result == '3.0' and 'FIFO' in stderr")
def _(folder, base, outside):
    cache = folder / "jax"
    cache.mkdir(mode=0o700)
    (cache / "0123abcd-cache").write_bytes(b"x" * 64)
    os.mkfifo(cache / "0123abcd-atime")


@case("compilation-cache-dev-zero-entry", 3, [], CACHE_RUN + """
result, stderr = run('x + 1')""", check="result == '3.0' and 'feedbeef-cache' in stderr")
def _(folder, base, outside):
    cache = folder / "jax"
    cache.mkdir(mode=0o700)
    os.symlink("/dev/zero", cache / "feedbeef-cache")


# item 5: unclear ---------------------------------------------------------------------
EXPORT_LOAD = """
reloaded = keras.export.load(D + '/a.export')
result = np.asarray(reloaded.serve(np.zeros((2, 4), 'float32')))"""


def _manifest(entries, **changes):
    manifest = json.loads(entries["manifest.json"])
    for key, value in changes.items():
        if value is None:
            manifest.pop(key, None)
        else:
            manifest[key] = value
    return dict(entries, **{"manifest.json": json.dumps(manifest).encode()})


EXPORT_DAMAGE = {
    "no-collections": lambda e: _manifest(e, collections=None),
    "collection-of-ints": lambda e: _manifest(e, collections={"k": [1]}),
    "variables-a-string": lambda e: _manifest(e, variables="2"),
    "variables-too-many": lambda e: _manifest(e, variables=5),
    "no-endpoints": lambda e: _manifest(e, endpoints=None),
    "endpoint-missing": lambda e: _manifest(e, endpoints=["other"]),
    "endpoint-dunder": lambda e: _manifest(e, endpoints=["__class__"]),
    "extra-field": lambda e: _manifest(e, surprise={"a": [1, 2]}),
    "manifest-a-list": lambda e: dict(e, **{"manifest.json": b"[1]"}),
    "manifest-garbled-json": lambda e: dict(e, **{"manifest.json": b'{"endpoints": [\xff'}),
    "manifest-missing": lambda e: {k: v for k, v in e.items() if k != "manifest.json"},
    "variables-npz-missing": lambda e: {k: v for k, v in e.items() if k != "variables.npz"},
    "variables-npz-garbage": lambda e: dict(e, **{"variables.npz": b"PK\x03\x04garbage"}),
    "endpoint-truncated": lambda e: dict(e, **{
        "endpoints/serve.jax_exported": e["endpoints/serve.jax_exported"][:40]}),
    "endpoint-empty": lambda e: dict(e, **{"endpoints/serve.jax_exported": b""}),
}


def _bitflip_stablehlo(entries):
    blob = bytearray(entries["endpoints/serve.jax_exported"])
    at = blob.index(b"ML\xefR") + 4
    blob[at:at + 16] = b"\xff" * 16
    return dict(entries, **{"endpoints/serve.jax_exported": bytes(blob)})


def _bitflip_stablehlo_body(entries):
    blob = bytearray(entries["endpoints/serve.jax_exported"])
    at = blob.index(b"ML\xefR") + 40
    for i in range(at, min(at + 64, len(blob)), 3):
        blob[i] ^= 0x5A
    return dict(entries, **{"endpoints/serve.jax_exported": bytes(blob)})


EXPORT_DAMAGE["stablehlo-version-bitflipped"] = _bitflip_stablehlo
EXPORT_DAMAGE["stablehlo-body-bitflipped"] = _bitflip_stablehlo_body

for damage, edit in EXPORT_DAMAGE.items():
    def build(folder, base, outside, edit=edit):
        _write_zip(folder / "a.export", edit(base.export))
    case(f"export-{damage}", 5, ["a.export"], EXPORT_LOAD,
         check="result.shape == (2, 3)")(build)


@case("export-archive-truncated", 5, ["a.export"], EXPORT_LOAD)
def _(folder, base, outside):
    data = _write_zip(folder / "a.export", base.export).read_bytes()
    (folder / "a.export").write_bytes(data[:len(data) // 2])


@case("export-member-crc-flipped", 5, ["a.export"], EXPORT_LOAD)
def _(folder, base, outside):
    data = bytearray(_write_zip(folder / "a.export", base.export).read_bytes())
    at = data.index(b"ML\xefR") + 100
    data[at] ^= 0xFF
    (folder / "a.export").write_bytes(bytes(data))


@case("cifar-refused-pickle-payload", 5, ["cifar.tar.gz"],
      "result = keras.datasets.cifar10.load_data(D + '/cifar.tar.gz')")
def _(folder, base, outside):
    payload = pickle.dumps(_Reduce(os.system, (f"touch {outside}/pwned",)))
    cifar_tar(folder / "cifar.tar.gz", payload)


@case("imdb-refused-pickle-payload", 5, ["imdb.npz"],
      "result = keras.datasets.imdb.load_data(D + '/imdb.npz')")
def _(folder, base, outside):
    import numpy as np
    bad = pickle.dumps(_Reduce(os.system, (f"touch {outside}/pwned",)))
    header = ("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }").ljust(117) + "\n"
    member = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + bad
    _write_zip(folder / "imdb.npz", {"x_train.npy": member,
                                     "y_train.npy": npy(np.zeros(1, int)),
                                     "x_test.npy": npy(np.zeros(1, int)),
                                     "y_test.npy": npy(np.zeros(1, int))})


@case("pil-decompression-bomb", 5, ["1.png"], """
ds = keras.utils.image_dataset_from_directory(D + '/i', image_size=(8, 8))
result = [b for b in ds]""")
def _(folder, base, outside):
    (folder / "i" / "a").mkdir(parents=True)
    png_header(folder / "i" / "a" / "1.png", 12_000, 12_000)   # past PIL's warning limit


@case("png-truncated", 5, ["1.png"], """
ds = keras.utils.image_dataset_from_directory(D + '/i', image_size=(8, 8))
result = [b for b in ds]""")
def _(folder, base, outside):
    (folder / "i" / "a").mkdir(parents=True)
    data = png(folder / "i" / "a" / "1.png", 64).read_bytes()
    (folder / "i" / "a" / "1.png").write_bytes(data[:len(data) - 40])


@case("png-garbage", 5, ["1.png"], """
ds = keras.utils.image_dataset_from_directory(D + '/i', image_size=(8, 8))
result = [b for b in ds]""")
def _(folder, base, outside):
    (folder / "i" / "a").mkdir(parents=True)
    (folder / "i" / "a" / "1.png").write_bytes(b"not an image at all")


@case("wav-truncated", 5, ["1.wav"], """
ds = keras.utils.audio_dataset_from_directory(D + '/w')
result = [b for b in ds]""")
def _(folder, base, outside):
    (folder / "w" / "a").mkdir(parents=True)
    data = wav(folder / "w" / "a" / "1.wav", 1000).read_bytes()
    (folder / "w" / "a" / "1.wav").write_bytes(data[:30])


@case("wav-garbage", 5, ["1.wav"], """
ds = keras.utils.audio_dataset_from_directory(D + '/w')
result = [b for b in ds]""")
def _(folder, base, outside):
    (folder / "w" / "a").mkdir(parents=True)
    (folder / "w" / "a" / "1.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")


@case("state-not-utf8", 5, ["checkpoint"], RESTORE, warmup=WARM_CKPT)
def _(folder, base, outside):
    (folder / "ckpt-1.safetensors").write_bytes(base.shard)
    (folder / "checkpoint").write_bytes(b'model_checkpoint_path: "ckpt-\xff\xfe"\n')


@case("state-nul-entry", 5, ["checkpoint"], RESTORE, warmup=WARM_CKPT)
def _(folder, base, outside):
    (folder / "ckpt-1.safetensors").write_bytes(base.shard)
    (folder / "checkpoint").write_bytes(b'model_checkpoint_path: "ckpt-1\\000x"\n'
                                        b'model_checkpoint_path: "ckpt\x00-1"\n')


@case("state-garbage", 5, ["checkpoint"], RESTORE, warmup=WARM_CKPT,
      check="list(result) == [0, 0, 0] and any('checkpoint state file' in w and 'ignored' in w "
            "for w in warned)")
def _(folder, base, outside):
    (folder / "ckpt-1.safetensors").write_bytes(base.shard)
    (folder / "checkpoint").write_bytes(b"\x00\x01\x02 model_checkpoint_path \"\n\"\"")


@case("shard-truncated", 5, ["ckpt-1.safetensors"], RESTORE, warmup=WARM_CKPT)
def _(folder, base, outside):
    (folder / "checkpoint").write_bytes(base.state)
    (folder / "ckpt-1.safetensors").write_bytes(base.shard[:len(base.shard) - 5])


@case("shard-header-garbage", 5, ["ckpt-1.safetensors"], RESTORE, warmup=WARM_CKPT)
def _(folder, base, outside):
    (folder / "checkpoint").write_bytes(base.state)
    n = struct.unpack("<Q", base.shard[:8])[0]
    (folder / "ckpt-1.safetensors").write_bytes(base.shard[:8] + b"\xff" * n
                                                + base.shard[8 + n:])


@case("shard-shape-mismatch", 5, ["ckpt-1.safetensors"], RESTORE, warmup=WARM_CKPT)
def _(folder, base, outside):
    import numpy as np

    import loopax.tf as tf
    ckpt = tf.train.Checkpoint(v=tf.Variable(np.ones((5,), "float32")))
    tf.train.CheckpointManager(ckpt, str(folder), max_to_keep=1).save()


@case("word-index-100k-deep", 5, ["index.json"],
      "result = keras.datasets.imdb.get_word_index(D + '/index.json')")
def _(folder, base, outside):
    (folder / "index.json").write_text("[" * 100_000 + "]" * 100_000)


@case("word-index-not-utf8", 5, ["index.json"],
      "result = keras.datasets.imdb.get_word_index(D + '/index.json')")
def _(folder, base, outside):
    (folder / "index.json").write_bytes(b'{"caf\xe9": 1}')


@case("word-index-not-an-object", 5, ["index.json"],
      "result = keras.datasets.reuters.get_word_index(D + '/index.json')")
def _(folder, base, outside):
    (folder / "index.json").write_text('{"a": [1, 2]}')


@case("vocabulary-not-utf8", 5, ["vocab.txt"],
      "result = keras.layers.StringLookup(vocabulary=D + '/vocab.txt')")
def _(folder, base, outside):
    (folder / "vocab.txt").write_bytes(b"a\ncaf\xe9\n")


@case("ragged-list-to-fit", 5, ["x", "equal-length", "pad"], """
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
result = model.fit([[1.0, 2.0], [3.0]], [[1.0], [2.0]], epochs=1, verbose=0)""")
def _(folder, base, outside):
    pass


@case("cifar-batch-wrong-shape", 5, ["cifar.tar.gz"],
      "result = keras.datasets.cifar10.load_data(D + '/cifar.tar.gz')")
def _(folder, base, outside):
    import numpy as np
    payload = pickle.dumps({b"data": np.zeros((4, 7), np.uint8), b"labels": [0, 1, 2, 3]})
    cifar_tar(folder / "cifar.tar.gz", payload)


@case("cifar-member-is-link-to-dev-zero", 5, ["cifar.tar.gz"],
      "result = keras.datasets.cifar10.load_data(D + '/cifar.tar.gz')")
def _(folder, base, outside):
    tar(folder / "cifar.tar.gz", [("cifar-10-batches-py/data_batch_1", "symlink",
                                   "/dev/zero")])


@case("keras-file-truncated", 5, ["a.keras"], "result = keras.saving.load_model(D + '/a.keras')")
def _(folder, base, outside):
    data = _write_zip(folder / "a.keras", base.keras_file).read_bytes()
    (folder / "a.keras").write_bytes(data[:len(data) // 2])


# item 7: get_file(extract=True) ------------------------------------------------------
GET_FILE = """
import warnings
result = keras.utils.get_file('data.tar.gz', origin='file://' + D + '/data.tar.gz',
                              extract=True, cache_dir=D + '/cache')
found = sorted(os.path.relpath(os.path.join(r, f), result)
               for r, dirs, files in os.walk(result) for f in files)"""
for member, kind, payload in [
    ("../../../outside/victim.txt", "file", b"owned"),
    ("{OUT}/abs_victim.txt", "file", b"owned"),
    ("data/link_out", "symlink", "../../../../outside/victim.txt"),
    ("data/abs_link", "symlink", "{OUT}/victim.txt"),
    ("data/hard_out", "hardlink", "../../../outside/victim.txt"),
    ("data/dev", "device", None),
    ("data/fifo", "fifo", None),
]:
    label = {"file": "dotdot" if member.startswith("..") else "absolute"}.get(kind, kind)
    if kind == "symlink":
        label = "symlink-" + ("absolute" if payload.startswith("{") else "dotdot")

    def build(folder, base, outside, member=member, kind=kind, payload=payload):
        if isinstance(payload, str):
            payload = payload.format(OUT=outside)
        tar(folder / "data.tar.gz", [("data/a.txt", "file", b"a"),
                                      (member.format(OUT=outside), kind, payload)])
    case(f"get-file-extract-{label}", 7, [], GET_FILE,
         check="found == ['data/a.txt'] and any('skipped' in w for w in warned)")(build)


@case("get-file-extract-zip-dotdot", 7, [], GET_FILE.replace("data.tar.gz", "data.zip"),
      check="found == ['ok/x.txt']")
def _(folder, base, outside):
    _write_zip(folder / "data.zip", {"ok/x.txt": b"x", "../../../outside/victim.txt": b"owned",
                                     "/" + str(outside / "abs_victim.txt"): b"owned"})


@case("get-file-extract-tar-declares-17gib", 7, ["data.tar.gz"], GET_FILE)
def _(folder, base, outside):
    """One member whose header declares 17 GiB (GNU base-256 size), nothing behind it."""
    with tarfile.open(folder / "data.tar.gz", "w:gz", format=tarfile.GNU_FORMAT) as archive:
        info = tarfile.TarInfo("data/big.bin")
        info.size = 17 * 2**30
        archive.addfile(info)


@case("get-file-extract-zip-3gib-declaring-4gib", 7, ["data.zip"],
      GET_FILE.replace("data.tar.gz", "data.zip"))
def _(folder, base, outside):
    bomb_zip(folder / "data.zip", "data/x.npy", 3)
    declare_huge(folder / "data.zip")


@case("get-file-extract-zip-lies-small", 7, ["data.zip"],
      GET_FILE.replace("data.tar.gz", "data.zip"),
      check="found == ['data/x.npy'] and os.path.getsize(result + '/data/x.npy') < 2**31")
def _(folder, base, outside):
    """A deflated member declaring 1 kB that inflates to 1 GiB."""
    bomb_zip(folder / "data.zip", "data/x.npy", 1)
    data = bytearray((folder / "data.zip").read_bytes())
    at = data.index(b"PK\x01\x02")
    data[at + 24:at + 28] = struct.pack("<I", 1000)
    (folder / "data.zip").write_bytes(bytes(data))


# item 6: interrupts and threads ------------------------------------------------------
@case("ctrl-c-after-each-compiled-step-then-fit-again-backup", 6, [], """
import signal
from loopax.src.trainers.programs import StepProgram
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
model.compile(optimizer="sgd", loss="mse")
x, y = np.ones((16, 3), "float32"), np.ones((16, 2), "float32")
compiled = StepProgram.__call__
problems = []
for at in range(1, 10):
    calls = [0]
    def call(self, *args, **kwargs):
        out = compiled(self, *args, **kwargs)
        calls[0] += 1
        if calls[0] == at:
            signal.raise_signal(signal.SIGINT)   # Ctrl-C as the compiled step returns
        return out
    backup = keras.callbacks.BackupAndRestore(D + f'/backup{at}', save_freq=1)
    StepProgram.__call__ = call
    try:
        model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[backup])
    except KeyboardInterrupt:
        pass
    finally:
        StepProgram.__call__ = compiled
    try:
        model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[backup])
        model.predict(x, verbose=0)
        [np.asarray(w) for w in model.get_weights()]
    except Exception as e:
        problems.append(f"{at}: {type(e).__name__}: {e}"[:200])
result = problems""", check="result == []")
def _(folder, base, outside):
    pass


@case("host-callback-raising-in-a-step-then-fit-again", 6, [], """
import jax
calls = [0]
def boom(x):
    calls[0] += 1
    if calls[0] == 6:          # the 2nd step of the 2nd epoch, after the epoch-end sync
        raise RuntimeError("a host callback in the loss raised")
def loss(y, p):
    jax.debug.callback(boom, p)
    return keras.ops.mean((y - p) ** 2)
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
model.compile(optimizer="sgd", loss=loss)
x, y = np.ones((16, 3), "float32"), np.ones((16, 2), "float32")
try:
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)
except Exception:
    pass                       # the step's error, raised by fit as it should be
calls[0] = -10**9
model.fit(x, y, batch_size=4, epochs=1, verbose=0)
result = [np.asarray(w) for w in model.get_weights()]""",
      check="all(np.isfinite(w).all() for w in result)")
def _(folder, base, outside):
    pass


@case("save-from-a-thread-during-fit", 6, [], """
import threading, time
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
model.compile(optimizer="sgd", loss="mse")
x, y = np.ones((64, 3), "float32"), np.ones((64, 2), "float32")
class Slow(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.02)
saves = []
def save():
    time.sleep(0.3)
    try:
        model.save(D + '/m.keras')
        saves.append("saved")
    except Exception as e:
        saves.append(f"{type(e).__name__}: {e}")
thread = threading.Thread(target=save)
thread.start()
history = model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[Slow()])
thread.join()
result = (len(history.history["loss"]), saves)""",
      check="result[0] == 3 and result[1] and (result[1][0] == 'saved' or "
            "'another thread' in result[1][0])")
def _(folder, base, outside):
    pass


WRITER = """
import os, shutil, sys, time
d = sys.argv[1]
end = time.time() + 8
i = 0
while time.time() < end:
    shutil.copyfile(d + f"/v{i % 2}.keras", d + "/tmp.keras")
    os.replace(d + "/tmp.keras", d + "/a.keras")
    i += 1
"""


@case("load-weights-while-another-process-replaces", 6, [], f"""
import subprocess, sys, time
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
writer = subprocess.Popen([sys.executable, '-c', {WRITER!r}, D])
failures, seen = [], set()
end = time.time() + 6
loads = 0
while time.time() < end:
    try:
        model.load_weights(D + '/a.keras')
        seen.add(float(np.asarray(model.get_weights()[1])[0]))
    except Exception as e:
        failures.append(f"{{type(e).__name__}}: {{e}}"[:200])
    loads += 1
writer.wait()
result = (loads, failures[:3], len(failures), sorted(seen))""",
      check="result[2] == 0 and set(result[3]) <= {1.0, 2.0} and result[0] > 10")
def _(folder, base, outside):
    import numpy as np

    import loopax
    for i, value in enumerate((1.0, 2.0)):
        model = loopax.Sequential([loopax.Input((8,)), loopax.layers.Dense(4)])
        model.set_weights([np.full((8, 4), value, "float32"), np.full((4,), value, "float32")])
        model.save(folder / f"v{i}.keras")
    shutil.copyfile(folder / "v0.keras", folder / "a.keras")


# ---------------------------------------------------------------- running -----------

def classify(spec, answer, folder):
    if answer is None:
        return "crash"
    if answer.get("touched"):
        return "silent"
    if answer["outcome"] == "result":   # without a check, the case expected a refusal
        return "held" if answer.get("correct", False) else "silent"
    if answer["type"] == "MemoryError":
        return "crash"
    names = [n.format(D=folder) for n in spec["names"]]
    classes = set(answer.get("error_classes", [answer["type"]]))
    clear = bool(classes & CLEAR_ERRORS) and not classes & RAW_ERRORS
    if clear and (not names or any(n in answer["message"] for n in names)):
        return "held"
    return "unclear"


def run_case(spec, work: Path, memory: int, timeout: float):
    folder = work / "cases" / spec["name"]
    outside = work / "outside"
    child = {"code": spec["code"], "check": spec["check"], "folder": str(folder),
             "outside": str(outside), "memory": memory * 2**20, "warmup": spec["warmup"]}
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOOPAX_HOME=str(folder / "home"),
               LOOPAX_COMPILATION_CACHE="0", KERAS_HOME=str(folder / "home"))
    process = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(child)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    answer, note, started = None, "", None
    try:
        out, err = process.communicate(timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        out, err = process.communicate()
        note = f"ran past {timeout + 120:.0f} s"
    for line in out.splitlines():
        if line.startswith("ANSWER "):
            answer = json.loads(line[7:])
        elif line == "READY":
            started = True
    if answer is not None and answer["seconds"] > timeout:
        note = f"took {answer['seconds']} s (> {timeout} s)"
        answer = None
    if answer is None and not note:
        note = (f"exit {process.returncode}" + ("" if started else " before READY")
                + ": " + " | ".join(err.strip().splitlines()[-2:])[-300:])
    return answer, note


def check_sentinels(outside: Path, sentinels: dict) -> list[str]:
    damaged = [str(p) for p, digest in sentinels.items()
               if not p.exists() or hashlib.sha256(p.read_bytes()).hexdigest() != digest]
    damaged += [str(p) for p in outside.rglob("*") if p.is_file() and p not in sentinels]
    return damaged


def make_outside(outside: Path) -> dict:
    import numpy as np

    import loopax.tf as tf
    outside.mkdir(parents=True)
    (outside / "victim.txt").write_text("the victim")
    (outside / "abs_victim.txt").write_text("the other victim")
    ckpt = tf.train.Checkpoint(v=tf.Variable(np.full((3,), 7.0, "float32")))
    ckpt.write(str(outside / "ckpts" / "x"))
    return {p: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in outside.rglob("*") if p.is_file()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("-k", "--select", default="", help="only cases whose name has this")
    parser.add_argument("--memory", type=int, default=512, help="MiB over the baseline")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a case")
    parser.add_argument("--work", default=None, help="folder for the files (default: temp)")
    parser.add_argument("--json", default=None, help="write the outcomes here")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--from-json", default=None,
                        help="classify the answers a --json run stored, without running")
    args = parser.parse_args(argv)
    specs = [s for s in CASES.values() if args.select in s["name"]]
    if args.from_json:
        return _reclassify(Path(args.from_json), specs)
    if args.list:
        for s in specs:
            print(s["group"], s["name"])
        print(len(specs), "cases")
        return 0
    work = Path(args.work or tempfile.mkdtemp(prefix="hostile-"))
    if work.exists() and any(work.iterdir()):
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    start = time.time()
    base = Base(work / "base")
    sentinels = make_outside(work / "outside")
    for spec in specs:
        folder = work / "cases" / spec["name"]
        folder.mkdir(parents=True)
        spec["build"](folder, base, work / "outside")
    print(f"built {len(specs)} cases in {time.time() - start:.0f} s under {work}", flush=True)
    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_case, s, work, args.memory, args.timeout): s for s in specs}
        for future in concurrent.futures.as_completed(futures):
            spec = futures[future]
            answer, note = future.result()
            verdict = classify(spec, answer, str(work / "cases" / spec["name"]))
            results[spec["name"]] = dict(verdict=verdict, answer=answer, note=note,
                                         group=spec["group"])
            detail = note or _detail(answer)
            print(f"{verdict:8} {spec['group']} {spec['name']:55} {detail}"[:300], flush=True)
    damaged = check_sentinels(work / "outside", sentinels)
    counts = {v: sum(r["verdict"] == v for r in results.values())
              for v in ("held", "unclear", "silent", "crash")}
    if damaged:
        print("files outside the case folders changed or added:", damaged)
    print(f"{len(results)} cases: {counts['held']} held, {counts['unclear']} unclear, "
          f"{counts['silent']} silent, {counts['crash']} crash "
          f"({time.time() - start:.0f} s, memory cap +{args.memory} MiB, {args.timeout:.0f} s "
          f"a case, {args.jobs} at a time)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if counts["held"] == len(results) and not damaged else 1


def _reclassify(path: Path, specs) -> int:
    stored = json.loads(path.read_text())
    counts = dict.fromkeys(("held", "unclear", "silent", "crash"), 0)
    for spec in specs:
        if spec["name"] not in stored:
            continue
        answer = stored[spec["name"]]["answer"]
        folder = answer and next((m.split("/cases/")[0] + "/cases/" + spec["name"]
                                  for m in [answer.get("message", "")] if "/cases/" in m), "")
        verdict = classify(spec, answer, folder or "")
        counts[verdict] += 1
        if verdict != "held":
            print(f"{verdict:8} {spec['group']} {spec['name']:55} "
                  f"{stored[spec['name']]['note'] or _detail(answer)}"[:300])
    print(f"{sum(counts.values())} cases: {counts['held']} held, {counts['unclear']} unclear, "
          f"{counts['silent']} silent, {counts['crash']} crash (from {path})")
    return 0 if counts["held"] == sum(counts.values()) else 1


def _detail(answer):
    touched = f" touched {answer['touched']}" if answer["touched"] else ""
    if answer["outcome"] == "result":
        how = {True: "correct", False: "WRONG"}.get(answer.get("correct"),
                                                   "a refusal was expected")
        return f"result ({how}) +{answer['rss_growth_mib']} MiB {answer['seconds']} s{touched}"
    message = answer["message"].replace("\n", " ")
    return f"{answer['type']} at {answer['where']}: {message[:160]}{touched}"


if __name__ == "__main__":
    sys.exit(main())
