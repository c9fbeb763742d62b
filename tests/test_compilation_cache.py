"""The persistent compilation cache: a rerun of a script compiles nothing it compiled
before and gives the same numbers; a corrupt cache or an unwritable directory never
breaks a run; the cache stays within its size bound."""

import glob
import json
import os
import subprocess
import sys
import textwrap
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax.src import compilation_cache

SCRIPT = textwrap.dedent("""
    import json, jax, numpy as np
    # A program compiled (and written to the cache) is a miss; one loaded from it a hit.
    counts = {"compiles": 0, "hits": 0}
    EVENTS = {"/jax/compilation_cache/cache_misses": "compiles",
              "/jax/compilation_cache/cache_hits": "hits"}
    def on_event(event, **kwargs):
        if event in EVENTS:
            counts[EVENTS[event]] += 1
    jax.monitoring.register_event_listener(on_event)
    import loopax as keras
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    x = rng.random((96, 8), dtype=np.float32)
    y = rng.integers(0, 3, 96)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(3)])
    model.compile(optimizer="adam", metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=32, epochs=2, validation_split=0.25, verbose=0)
    prediction = model.predict(x[:5], verbose=0)
    print(json.dumps({"loss": history.history["loss"], "val_loss": history.history["val_loss"],
                      "prediction": prediction.tolist(),
                      "cache_dir": keras.config.compilation_cache_dir(), **counts}))
""")


def run_script(home, **env_overrides):
    env = {k: v for k, v in os.environ.items() if k != "LOOPAX_COMPILATION_CACHE"}
    env.update(LOOPAX_HOME=str(home), **env_overrides)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def cache_entries(home):
    return glob.glob(os.path.join(home, "cache", "jax", "*-cache"))


def test_a_rerun_compiles_nothing_and_a_corrupt_cache_only_costs_a_compile(tmp_path):
    first, _ = run_script(tmp_path)
    assert first["cache_dir"] == os.path.join(str(tmp_path), "cache", "jax")
    assert first["compiles"] > first["hits"]    # a hit here: one program built twice
    # Every program compiled, however quick, is kept (JAX's default keeps those over 1 s).
    assert len(cache_entries(tmp_path)) == first["compiles"]

    entries = len(cache_entries(tmp_path))
    second, _ = run_script(tmp_path)
    # Nothing compiled in the first run is compiled again. (The "auto" planner may choose
    # another loop length from its timings, a program the first run never built.)
    assert len(cache_entries(tmp_path)) - entries == second["compiles"] <= 2
    assert second["hits"] >= first["compiles"] + first["hits"] - 2
    for key in ("loss", "val_loss", "prediction"):
        assert second[key] == first[key], key

    for i, path in enumerate(cache_entries(tmp_path)):
        data = open(path, "rb").read()
        with open(path, "wb") as f:    # truncated, garbage, empty: one of each in turn
            f.write([data[: len(data) // 2], b"\x00garbage" * 10, b""][i % 3])
    third, _ = run_script(tmp_path)
    assert third["compiles"] > 0
    for key in ("loss", "val_loss", "prediction"):
        assert third[key] == first[key], key


def test_environment_switch_turns_it_off(tmp_path):
    result, _ = run_script(tmp_path, LOOPAX_COMPILATION_CACHE="0")
    assert result["cache_dir"] is None and result["hits"] == 0
    assert not os.path.exists(tmp_path / "cache")


@pytest.fixture
def restore_cache_setting():
    yield
    compilation_cache.disable_compilation_cache()
    jax.config.update("jax_compilation_cache_max_size", -1)


def test_an_unwritable_directory_warns_and_leaves_the_cache_off(tmp_path, restore_cache_setting):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.warns(UserWarning, match="compilation cache stays off.*LOOPAX_COMPILATION_CACHE"):
        assert loopax.config.enable_compilation_cache(str(blocker / "cache")) is False
    assert loopax.config.compilation_cache_dir() is None
    assert float(jax.jit(lambda v: v * 2.0)(jnp.float32(1.5))) == 3.0


def test_the_cache_stays_within_its_size_bound(tmp_path, restore_cache_setting):
    bound = 20_000
    assert loopax.config.enable_compilation_cache(str(tmp_path), max_size_bytes=bound)
    for k in range(12):    # a dozen distinct programs of over 3 kB each: 36 kB or more
        jax.jit(lambda v, k=k: jnp.tanh(v @ v.T + k).sum())(jnp.ones((8, 4 + k)))
    sizes = [os.path.getsize(p) for p in glob.glob(str(tmp_path / "*-cache"))]
    assert min(sizes) > 3000 and sum(sizes) <= bound    # the oldest went
    loopax.config.clear_compilation_cache()
    assert glob.glob(str(tmp_path / "*-cache")) == []
    np.testing.assert_allclose(jax.jit(lambda v: v + 1)(np.ones(3)), 2.0)


def test_a_program_loaded_from_the_cache_reports_about_its_compile_as_saved(
        tmp_path, restore_cache_setting):
    """JAX stores a program's compile time in whole seconds, rounded down; a load
    reports that plus half a second, less the load, as saved (this thread only)."""
    assert loopax.config.enable_compilation_cache(str(tmp_path))
    program = jax.jit(lambda v: jnp.sin(v) @ v.T)
    x = jnp.ones((16, 16))
    before = compilation_cache.compile_seconds_saved()
    program(x)   # compiled and stored
    assert compilation_cache.compile_seconds_saved() == before
    jax.clear_caches()
    start = time.perf_counter()
    program(x)   # loaded
    load = time.perf_counter() - start
    saved = compilation_cache.compile_seconds_saved() - before
    assert 0.5 - load <= saved <= 0.5   # compiled in under a second: stored as 0


def test_the_directory_is_created_private(tmp_path, restore_cache_setting):
    directory = tmp_path / "new" / "jax"
    assert loopax.config.enable_compilation_cache(str(directory))
    assert os.stat(directory).st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o770, 0o757, 0o777])
def test_a_directory_others_can_write_leaves_the_cache_off(tmp_path, restore_cache_setting,
                                                           mode):
    """Another user who can write the folder can swap an entry (a program JAX runs
    unchecked); the old code used such a folder."""
    directory = tmp_path / "shared"
    directory.mkdir()
    os.chmod(directory, mode)
    with pytest.warns(UserWarning, match=r"stays off.*is not private: other users can write"
                                         r".*chmod 700"):
        assert loopax.config.enable_compilation_cache(str(directory)) is False
    assert loopax.config.compilation_cache_dir() is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a folder to another user needs root")
def test_a_directory_of_another_user_leaves_the_cache_off(tmp_path, restore_cache_setting):
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    os.chown(directory, 54321, -1)
    with pytest.warns(UserWarning, match=r"owned by another user \(uid 54321"):
        assert loopax.config.enable_compilation_cache(str(directory)) is False
