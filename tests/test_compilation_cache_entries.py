"""The compilation cache refuses a folder holding what JAX would block on (a FIFO, a
device) instead of hanging, and creates every folder it makes private."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest

import loopax
from loopax.src import compilation_cache

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")

FRESH_PROCESS = textwrap.dedent("""
    import warnings
    warnings.simplefilter("always")
    import jax, jax.numpy as jnp
    import loopax
    print(float(jax.jit(lambda v: v * 2.0 + 1.0)(jnp.float32(1.5))))
    print(loopax.config.compilation_cache_dir())
""")


@pytest.fixture
def restore_cache_setting():
    yield
    compilation_cache.disable_compilation_cache()
    jax.config.update("jax_compilation_cache_max_size", -1)


def test_a_fifo_in_the_cache_does_not_hang_a_fresh_process(tmp_path):
    """JAX reads every entry's `-atime` file when it evicts, at its first write: the old
    code waited there forever for a writer to the FIFO."""
    folder = tmp_path / "cache" / "jax"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(tmp_path / "cache", 0o700)
    (folder / "0123abcd-cache").write_bytes(b"x" * 64)
    os.mkfifo(folder / "0123abcd-atime")
    env = {k: v for k, v in os.environ.items() if k != "LOOPAX_COMPILATION_CACHE"}
    env["LOOPAX_HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", FRESH_PROCESS], env=env, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["4.0", "None"]
    warnings = [line for line in done.stderr.splitlines() if "compilation cache" in line]
    assert len(warnings) == 1, done.stderr
    assert str(folder) in warnings[0] and "0123abcd-atime" in warnings[0]
    assert "FIFO" in warnings[0]


@pytest.mark.parametrize("make_entry", ["fifo", "device", "directory", "dangling_link"])
def test_an_entry_that_is_not_a_regular_file_leaves_the_cache_off(
        tmp_path, restore_cache_setting, make_entry):
    folder = tmp_path / "jax"
    folder.mkdir(mode=0o700)
    entry = folder / "feedbeef-cache"
    if make_entry == "fifo":
        os.mkfifo(entry)
    elif make_entry == "device":
        os.symlink("/dev/zero", entry)    # a read of it never ends
    elif make_entry == "directory":
        entry.mkdir()
    else:    # JAX would write the program wherever the link points
        os.symlink(tmp_path / "elsewhere", entry)
    with pytest.warns(UserWarning) as caught:
        assert loopax.config.enable_compilation_cache(str(folder)) is False
    messages = [str(w.message) for w in caught if "compilation cache" in str(w.message)]
    assert len(messages) == 1
    assert str(folder) in messages[0] and "feedbeef-cache" in messages[0]
    assert "LOOPAX_COMPILATION_CACHE" in messages[0]
    assert loopax.config.compilation_cache_dir() is None
    assert float(jax.jit(lambda v: v - 1.0)(jnp.float32(1.5))) == 0.5
    assert not (tmp_path / "elsewhere").exists()


def test_regular_entries_keep_the_cache_on(tmp_path, restore_cache_setting):
    folder = tmp_path / "jax"
    folder.mkdir(mode=0o700)
    (folder / "feedbeef-cache").write_bytes(b"\x00garbage")
    (folder / "feedbeef-atime").write_bytes((1).to_bytes(8, "little"))
    assert loopax.config.enable_compilation_cache(str(folder)) is True
    assert float(jax.jit(lambda v: v * 4.0)(jnp.float32(1.5))) == 6.0


def test_xla_autotune_folder_is_allowed_and_its_entries_checked(tmp_path,
                                                                 restore_cache_setting):
    """On GPUs JAX has XLA keep its autotuning results in a folder of the cache
    directory; a later run must not take it for a stray entry."""
    folder = tmp_path / "jax"
    autotune = folder / "xla_gpu_per_fusion_autotune_cache_dir"
    autotune.mkdir(parents=True)
    os.chmod(folder, 0o700)
    (autotune / "0a1b.textproto").write_text("results")
    assert loopax.config.enable_compilation_cache(str(folder)) is True
    compilation_cache.disable_compilation_cache()
    os.mkfifo(autotune / "fifo")
    with pytest.warns(UserWarning, match=r"xla_gpu_per_fusion_autotune_cache_dir/fifo"):
        assert loopax.config.enable_compilation_cache(str(folder)) is False


def test_every_folder_it_creates_is_private(tmp_path, restore_cache_setting, monkeypatch):
    """LOOPAX_HOME and LOOPAX_HOME/cache too, not only the last folder (os.makedirs gives
    the folders above it the umask's mode, 0755 under umask 022)."""
    home = tmp_path / "new_home"
    monkeypatch.setenv("LOOPAX_HOME", str(home))
    old_umask = os.umask(0o022)
    try:
        assert loopax.config.enable_compilation_cache() is True
    finally:
        os.umask(old_umask)
    for folder in (home, home / "cache", home / "cache" / "jax"):
        assert os.stat(folder).st_mode & 0o777 == 0o700, folder
    assert loopax.config.compilation_cache_dir() == str(home / "cache" / "jax")


def test_an_existing_parent_keeps_its_mode(tmp_path, restore_cache_setting):
    os.chmod(tmp_path, 0o755)
    assert loopax.config.enable_compilation_cache(str(tmp_path / "jax")) is True
    assert os.stat(tmp_path).st_mode & 0o777 == 0o755
