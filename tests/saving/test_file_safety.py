"""Loading reads nothing but the file, within bounded memory, with errors that
name the file; a killed save leaves nothing behind for long (docs/saving.md).

Each test builds a hostile or damaged file by hand (zipfile, safetensors,
h5py) from one a loopax model wrote, and checks the outcome against what the
file format allows: the error, and memory measured with tracemalloc (Python and
NumPy buffers) or, for HDF5's C allocations, a subprocess's peak RSS.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile

import numpy as np
import pytest
from safetensors import numpy as safetensors_numpy

import loopax
from loopax.layers import Dense, IntegerLookup, StringLookup, TextVectorization
from loopax.saving import load_model
from loopax.src.saving import weights_file

MiB = 2**20
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def small_model():
    model = loopax.Sequential([loopax.Input((8,)), Dense(4)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 8), np.float32), np.ones((4, 4), np.float32), verbose=0)
    return model


def entries_of(path):
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def write_entries(path, entries, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)


def traced_peak(fn):
    """(what `fn()` raised or returned, the peak bytes tracemalloc saw during it)."""
    tracemalloc.start()
    try:
        try:
            outcome = fn()
        except Exception as e:  # returned for the assertions
            outcome = e
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --------------------------------------------------------------------------
# 1. A vocabulary path in a config being loaded is refused
# --------------------------------------------------------------------------

LOOKUPS = {
    "StringLookup": (lambda vocab: StringLookup(vocabulary=vocab, name="words"),
                     ["alpha", "beta"], "secret-token"),
    "IntegerLookup": (lambda vocab: IntegerLookup(vocabulary=vocab, name="words"),
                      [3, 5], "424242"),
    "TextVectorization": (lambda vocab: TextVectorization(vocabulary=vocab, name="words"),
                          ["alpha", "beta"], "secret-token"),
}


def lookup_model_file(tmp_path, kind, vocabulary):
    """A model file whose lookup layer's config names `vocabulary` (a path)."""
    make, tokens, _ = LOOKUPS[kind]
    model = loopax.Sequential([make(tokens)])
    path = tmp_path / f"{kind}.keras"
    model.save(path)
    entries = entries_of(path)
    config = json.loads(entries["config.json"])
    config["config"]["layers"][0]["config"]["vocabulary"] = vocabulary
    entries["config.json"] = json.dumps(config)
    write_entries(path, entries)
    return path


@pytest.mark.parametrize("kind", list(LOOKUPS))
def test_vocabulary_path_in_a_model_file_is_refused_in_safe_mode(tmp_path, kind):
    _, _, secret = LOOKUPS[kind]
    (tmp_path / "secret.txt").write_text(secret + "\n")
    path = lookup_model_file(tmp_path, kind, str(tmp_path / "secret.txt"))
    with pytest.raises(ValueError) as error:
        load_model(path)
    message = str(error.value)
    assert f"{kind} 'words'" in message
    assert repr(str(tmp_path / "secret.txt")) in message
    assert "safe_mode=False" in message
    # The caller who trusts the file gets Keras's behaviour: the file is read.
    loaded = load_model(path, safe_mode=False)
    vocabulary = loaded.layers[0].get_vocabulary(include_special_tokens=False)
    assert [str(token) for token in vocabulary] == [secret]


def test_vocabulary_path_in_a_config_is_refused_by_deserialize_not_by_your_code(tmp_path):
    # As Keras: deserialize() is safe by default; building the layer yourself is not
    # loading a file.
    (tmp_path / "vocab.txt").write_text("alpha\nbeta\n")
    config = loopax.layers.serialize(StringLookup(vocabulary=["x"], name="words"))
    config["config"]["vocabulary"] = str(tmp_path / "vocab.txt")
    with pytest.raises(ValueError, match="StringLookup 'words'.*safe_mode=False"):
        loopax.layers.deserialize(config)
    layer = StringLookup.from_config(config["config"])
    assert layer.get_vocabulary() == ["[UNK]", "alpha", "beta"]


def test_a_model_built_from_a_vocabulary_file_saves_the_tokens(tmp_path):
    (tmp_path / "vocab.txt").write_text("alpha\nbeta\ngamma\n")
    model = loopax.Sequential([StringLookup(vocabulary=str(tmp_path / "vocab.txt"))])
    model.save(tmp_path / "m.keras")
    os.remove(tmp_path / "vocab.txt")
    saved = json.loads(entries_of(tmp_path / "m.keras")["config.json"])
    assert saved["config"]["layers"][0]["config"]["vocabulary"] == ["alpha", "beta", "gamma"]
    loaded = load_model(tmp_path / "m.keras")     # safe mode: nothing but the file
    lookup = loaded.layers[0]
    np.testing.assert_array_equal(lookup(np.array(["gamma", "delta", "alpha"])), [3, 0, 1])


# --------------------------------------------------------------------------
# 2. Every entry bounded by its role; unknown entries refused
# --------------------------------------------------------------------------

INFLATED = {
    # entry: bytes it inflates to (zeros or spaces compress about 1000:1)
    "assets/unused.bin": 32 * MiB,
    "config.json": 80 * MiB,            # over MAX_CONFIG_BYTES (64 MiB)
    "model.weights.safetensors": 32 * MiB,
    "training_state.safetensors": 32 * MiB,
}


@pytest.mark.parametrize("entry", list(INFLATED))
def test_an_inflated_entry_is_refused_without_being_read(tmp_path, entry):
    path = tmp_path / "bomb.keras"
    small_model().save(path)
    entries = entries_of(path)
    entries[entry] = b" " * INFLATED[entry]
    write_entries(path, entries)
    assert path.stat().st_size < INFLATED[entry] // 500
    outcome, peak = traced_peak(lambda: load_model(path))
    assert isinstance(outcome, ValueError), outcome
    assert str(path) in str(outcome) and repr(entry) in str(outcome)
    assert peak < 4 * MiB, f"{peak / MiB:.0f} MiB traced while refusing {entry}"


def test_an_entry_the_format_does_not_have_is_refused(tmp_path):
    path = tmp_path / "extra.keras"
    small_model().save(path)
    entries = entries_of(path)
    entries["notes/readme.txt"] = b"hello"
    write_entries(path, entries)
    with pytest.raises(ValueError, match=r"extra.keras: entry 'notes/readme.txt' is not part "
                       "of a loopax model file"):
        load_model(path)


def test_a_layers_assets_still_load(tmp_path):
    class Words(loopax.layers.Layer):
        def __init__(self, words=(), **kwargs):
            super().__init__(**kwargs)
            self.words = list(words)

        def call(self, x):
            return x

        def save_assets(self, directory):
            with open(os.path.join(directory, "words.txt"), "w") as f:
                f.write("\n".join(self.words))

        def load_assets(self, directory):
            with open(os.path.join(directory, "words.txt")) as f:
                self.words = f.read().split("\n")

    model = loopax.Sequential([loopax.Input((2,)), Words(["a", "b"], name="w")])
    model.save(tmp_path / "m.keras")
    loaded = load_model(tmp_path / "m.keras", custom_objects={"Words": Words})
    assert loaded.get_layer("w").words == ["a", "b"]


# --------------------------------------------------------------------------
# 6. Declared shapes are checked before anything is allocated
# --------------------------------------------------------------------------

def big_kernel_weights():
    """A safetensors file declaring (and holding) a 64 MiB kernel for Dense(8 -> 4)."""
    return safetensors_numpy.save({"dense/kernel": np.zeros((4096, 4096), np.float32),
                                   "dense/bias": np.zeros(4, np.float32)})


def test_a_tiny_model_file_declaring_a_huge_kernel_costs_no_memory(tmp_path):
    path = tmp_path / "big.keras"
    small_model().save(path)
    entries = entries_of(path)
    entries["model.weights.safetensors"] = big_kernel_weights()
    write_entries(path, entries, zipfile.ZIP_BZIP2)
    assert path.stat().st_size < 8000
    outcome, peak = traced_peak(lambda: load_model(path))
    assert isinstance(outcome, ValueError) and "model.weights.safetensors" in str(outcome)
    assert peak < 4 * MiB, f"{peak / MiB:.0f} MiB traced"


def test_a_weights_file_of_another_shape_is_refused_from_its_header(tmp_path):
    path = tmp_path / "big.weights.safetensors"
    path.write_bytes(big_kernel_weights())
    model = small_model()
    before = model.get_weights()
    outcome, peak = traced_peak(lambda: model.load_weights(path))
    assert isinstance(outcome, ValueError)
    assert "dense/kernel: file (4096, 4096), model (8, 4)" in str(outcome)
    assert peak < 4 * MiB, f"{peak / MiB:.0f} MiB traced"
    for got, want in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------
# 7. Leftovers of a killed save; clear errors
# --------------------------------------------------------------------------

STALLED_SAVE = textwrap.dedent("""
    import os, sys, time
    import loopax
    path, method = sys.argv[1], sys.argv[2]
    model = loopax.Sequential([loopax.Input((8,)), loopax.layers.Dense(4)])
    def stall(fd):                       # inside the write, before the rename
        print("WRITING", flush=True)
        time.sleep(60)
    os.fsync = stall
    sys.stdin.readline()                 # "go"
    getattr(model, method)(path)
""")


def stalled_save(path, method):
    """A process that imports loopax, then (on "go") starts `model.<method>(path)`
    and stalls inside the write."""
    return subprocess.Popen([sys.executable, "-c", STALLED_SAVE, str(path), method],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT})


def go(process):
    process.stdin.write("go\n")
    process.stdin.flush()
    assert process.stdout.readline().strip() == "WRITING"


def temporaries(folder, name):
    """atomic_write's temporary files for target `name`: `<name>.<8 chars>.tmp`."""
    return [n for n in os.listdir(folder) if n.startswith(name + ".")
            and n.endswith(".tmp") and len(n) == len(name) + 13]


def test_the_next_save_removes_what_a_killed_save_left_and_nothing_else(tmp_path):
    model_path, weights_path = tmp_path / "m.keras", tmp_path / "m.weights.h5"
    unrelated = ["m.keras.notes.tmp", "other.keras.abcd1234.tmp", "m.keras.abcd1234.tmp.bak"]
    for other in unrelated:
        (tmp_path / other).write_bytes(b"keep")
    killed, live = stalled_save(model_path, "save"), stalled_save(weights_path, "save_weights")
    try:
        go(killed)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert len(temporaries(tmp_path, "m.keras")) == 1          # what the kill left
        go(live)                                                   # still writing
        live_file = temporaries(tmp_path, "m.weights.h5")
        assert len(live_file) == 1
        small_model().save_weights(weights_path)
        assert temporaries(tmp_path, "m.weights.h5") == live_file  # a live writer's: kept
        assert len(temporaries(tmp_path, "m.keras")) == 1          # another target's: kept
        small_model().save(model_path)
        assert temporaries(tmp_path, "m.keras") == []              # the leftover: removed
    finally:
        for process in (killed, live):
            process.kill()
            process.wait()
    small_model().save_weights(weights_path)                       # its writer is gone now
    assert sorted(os.listdir(tmp_path)) == sorted(unrelated + ["m.keras", "m.weights.h5"])


def nested(depth):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [300, 100_000], ids=["deeper-than-a-model", "json-limit"])
def test_a_deeply_nested_config_is_a_clear_error(tmp_path, depth):
    path = tmp_path / "deep.keras"
    small_model().save(path)
    entries = entries_of(path)
    text = entries["config.json"].decode()
    entries["config.json"] = text.replace('"layers": [', '"layers": [' + nested(depth) + ", ", 1)
    write_entries(path, entries)
    with pytest.raises(ValueError, match=r"deep.keras: config.json"):
        load_model(path)


@pytest.mark.parametrize("fmt", ["loopax", "keras"])
def test_a_huge_class_name_gives_a_short_error(tmp_path, fmt):
    path = tmp_path / "name.keras"
    small_model().save(path)
    entries = entries_of(path)
    config = json.loads(entries["config.json"])
    config["config"]["layers"][0]["class_name"] = "X" * 10 * MiB
    if fmt == "keras":
        config["module"] = "keras"
        entries = {"metadata.json": b"{}", "config.json": b"", "model.weights.h5": b""}
    entries["config.json"] = json.dumps(config)
    write_entries(path, entries)
    with pytest.raises(ValueError) as error:
        load_model(path)
    assert str(path) in str(error.value)
    assert "XXXX" in str(error.value) and len(str(error.value)) < 3000


def entry_data_offset(path, entry):
    """Where the stored (compressed) bytes of `entry` start in the zip file."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(entry)
    data = path.read_bytes()
    name_length, extra_length = np.frombuffer(
        data[info.header_offset + 26:info.header_offset + 30], "<u2")
    return info.header_offset + 30 + int(name_length) + int(extra_length), info.compress_size


@pytest.mark.parametrize("entry", ["config.json", "model.weights.safetensors"])
@pytest.mark.parametrize("where", [0.25, 0.5, 0.75])
def test_a_bit_flip_is_reported_as_a_corrupt_file(tmp_path, entry, where):
    path = tmp_path / "flip.keras"
    small_model().save(path)
    start, size = entry_data_offset(path, entry)
    data = bytearray(path.read_bytes())
    data[start + int(size * where)] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError) as error:
        load_model(path)
    assert str(path) in str(error.value)
    assert "corrupt" in str(error.value) or "does not match" in str(error.value)


PEAK_RSS_OF_LOAD = textwrap.dedent("""
    import resource, sys
    import loopax
    model = loopax.Sequential([loopax.Input((8,)), loopax.layers.Dense(4)])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        model.load_weights(sys.argv[1])
        print("loaded")
    except ValueError as e:
        print(len(str(e)))
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
""")


def test_extra_datasets_in_a_weights_h5_are_not_opened(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "many.weights.h5"
    with h5py.File(path, "w") as f:
        f["layers/dense/vars/0"] = np.ones((8, 4), np.float32)
        f["layers/dense/vars/1"] = np.ones(4, np.float32)
        extra = f.create_group("layers/dense/extra")
        for i in range(10_000):
            extra[f"d{i}"] = np.zeros(80, np.float32)
    out = subprocess.run([sys.executable, "-c", PEAK_RSS_OF_LOAD, str(path)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": ROOT})
    message_length, growth_mib = map(int, out.stdout.split())
    assert message_length < 3000          # 20 of the 10,000 unknown datasets are named
    assert growth_mib < 64, f"loading grew the peak RSS by {growth_mib} MiB"


def test_the_unknown_datasets_are_still_named(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "extra.weights.h5"
    with h5py.File(path, "w") as f:
        f["layers/dense/vars/0"] = np.ones((8, 4), np.float32)
        f["layers/dense/vars/1"] = np.ones(4, np.float32)
        f["layers/dense/vars/2"] = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="in the file but not in the model: "
                       "layers/dense/vars/2"):
        loopax.Sequential([loopax.Input((8,)), Dense(4)]).load_weights(path)
    model = loopax.Sequential([loopax.Input((8,)), Dense(4)])
    with pytest.warns(UserWarning, match="layers/dense/vars/2"):
        model.load_weights(path, skip_mismatch=True)
    np.testing.assert_array_equal(model.get_weights()[0], np.ones((8, 4)))


def test_stream_reader_matches_safetensors(tmp_path):
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3),
              "b": np.array([1, 2], np.int64), "c": np.zeros((0, 4), np.float16)}
    data = safetensors_numpy.save(arrays)
    out = weights_file.read_safetensors(data, "x")
    reference = safetensors_numpy.load(data)
    assert set(out) == set(reference)
    for key in reference:
        assert out[key].dtype == reference[key].dtype
        np.testing.assert_array_equal(out[key], reference[key])
