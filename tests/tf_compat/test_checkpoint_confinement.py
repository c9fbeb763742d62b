"""`tf.train.CheckpointManager` / `latest_checkpoint` read only the checkpoints of
their own folder: a `checkpoint` state file naming a path elsewhere (absolute,
`../`, through a symlink) is refused with an error naming the file and the entry,
and `save()` with `max_to_keep` never removes a file outside the folder.
(TensorFlow 2.21 joins relative entries to the folder and uses absolute ones as
written, `checkpoint_management.get_checkpoint_state`; loopax does the same for
entries inside the folder.) `list_variables` / `load_variable` open a shard as `restore`
does (a FIFO refused, the header checked) and read only what they return."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

import loopax.tf as tf


def _checkpoint(value=1.0):
    return tf.train.Checkpoint(v=tf.Variable(np.full((2,), value, "float32")))


def _victim(tmp_path, name="x"):
    """A safetensors-named file in another folder, saved by a real checkpoint."""
    other = tmp_path / "other"
    path = _checkpoint(7.0).write(str(other / name))
    return other / f"{name}.safetensors", path


def _state(folder, *entries):
    lines = [f'model_checkpoint_path: "{entries[-1]}"']
    lines += [f'all_model_checkpoint_paths: "{e}"' for e in entries]
    (folder / "checkpoint").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink"])
def test_state_file_naming_another_folder_is_refused(tmp_path, kind):
    victim_file, victim_prefix = _victim(tmp_path)
    folder = tmp_path / "ckpts"
    folder.mkdir()
    if kind == "absolute":
        entry = victim_prefix
    elif kind == "dotdot":
        entry = "../other/x"
    else:
        os.symlink(tmp_path / "other", folder / "link")
        entry = "link/x"
    _state(folder, entry)
    ckpt = _checkpoint()
    with pytest.raises(ValueError) as info:
        tf.train.CheckpointManager(ckpt, str(folder), max_to_keep=1)
    message = str(info.value)
    assert str(folder / "checkpoint") in message and repr(entry) in message
    assert "outside the folder" in message
    with pytest.raises(ValueError, match="outside the folder"):
        tf.train.latest_checkpoint(str(folder))
    assert victim_file.exists()
    np.testing.assert_array_equal(np.asarray(ckpt.v.value), [1.0, 1.0])


def test_save_with_max_to_keep_never_removes_outside(tmp_path):
    """The old code removed `other/x.safetensors` on the second save."""
    victim_file, _ = _victim(tmp_path)
    folder = tmp_path / "ckpts"
    manager = tf.train.CheckpointManager(_checkpoint(), str(folder), max_to_keep=1)
    manager.save()
    # the list a running manager keeps cannot be steered from outside either
    manager._paths.insert(0, str(tmp_path / "other" / "x"))
    manager.save()
    manager.save()
    assert victim_file.exists()
    assert sorted(os.listdir(folder)) == ["checkpoint", "ckpt-3.safetensors"]


def test_absolute_entries_inside_the_folder_are_kept(tmp_path):
    """TF 1's Saver wrote absolute paths (save_relative_paths=False): accepted
    when they name the folder's own files, as TensorFlow accepts them."""
    folder = tmp_path / "ckpts"
    first = tf.train.CheckpointManager(_checkpoint(3.0), str(folder), max_to_keep=2)
    saved = first.save()
    _state(folder, os.path.abspath(saved))
    ckpt = _checkpoint()
    manager = tf.train.CheckpointManager(ckpt, str(folder), max_to_keep=2)
    assert manager.restore_or_initialize() == os.path.abspath(saved)
    np.testing.assert_array_equal(np.asarray(ckpt.v.value), [3.0, 3.0])
    assert tf.train.latest_checkpoint(str(folder)) == os.path.abspath(saved)


@pytest.mark.parametrize("target", ["/dev/zero", "victim"])
def test_a_shard_that_links_out_is_refused_naming_the_shard_and_its_target(tmp_path, target):
    """The entry is the folder's own, its file a link out: the old message said only that
    the entry 'ckpt-1' names a checkpoint outside the folder (#34's attacker rerun)."""
    victim_file, _ = _victim(tmp_path)
    target = str(victim_file) if target == "victim" else target
    folder = tmp_path / "ckpts"
    tf.train.CheckpointManager(_checkpoint(), str(folder), max_to_keep=1).save()
    shard = folder / "ckpt-1.safetensors"
    shard.unlink()
    os.symlink(target, shard)
    for call in (lambda: tf.train.CheckpointManager(_checkpoint(), str(folder), max_to_keep=1),
                 lambda: tf.train.latest_checkpoint(str(folder))):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert str(shard) in message and f"a link to {target!r}" in message
        assert "Replace the link with the checkpoint file itself" in message
    assert victim_file.exists()


@pytest.mark.parametrize("which", ["state", "shard"])
def test_a_fifo_in_place_of_a_checkpoint_file_is_refused_without_blocking(tmp_path, which):
    folder = tmp_path / "ckpts"
    manager = tf.train.CheckpointManager(_checkpoint(), str(folder), max_to_keep=2)
    path = manager.save()
    target = folder / ("checkpoint" if which == "state" else "ckpt-1.safetensors")
    target.unlink()
    os.mkfifo(target)
    name = "a checkpoint state file" if which == "state" else "a checkpoint file"
    with pytest.raises(ValueError, match=rf"{target.name} \({name}\) is a FIFO"):
        if which == "state":
            tf.train.latest_checkpoint(str(folder))
        else:
            _checkpoint().restore(path)


def test_a_damaged_state_file_or_shard_names_the_file(tmp_path):
    folder = tmp_path / "ckpts"
    manager = tf.train.CheckpointManager(_checkpoint(), str(folder), max_to_keep=2)
    path = manager.save()
    shard = folder / "ckpt-1.safetensors"
    shard.write_bytes(shard.read_bytes()[:-4])  # truncated data
    with pytest.raises(
        ValueError,
        match="ckpt-1.safetensors: its header declares 12 bytes of data but the file holds 8",
    ):
        _checkpoint().restore(path)
    (folder / "checkpoint").write_bytes(b'model_checkpoint_path: "ckpt-\xff"\n')
    with pytest.raises(ValueError, match=r"checkpoint \(a checkpoint state file\), line 1: "
                                         r"the entry b'ckpt-\\xff' is not utf-8 text"):
        tf.train.latest_checkpoint(str(folder))


def _in_thread(call, seconds=20):
    """`call()`'s result or error, or a hang reported as a failure (not a frozen test)."""
    outcome = {}

    def run():
        try:
            outcome["result"] = call()
        except BaseException as e:  # returned to the caller
            outcome["error"] = e
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{call} blocked for {seconds} s"
    return outcome


@pytest.mark.parametrize("reader", ["list_variables", "load_variable"])
def test_a_fifo_shard_is_refused_by_list_and_load_variable(tmp_path, reader):
    folder = tmp_path / "ckpts"
    tf.train.CheckpointManager(_checkpoint(), str(folder), max_to_keep=2).save()
    shard = folder / "ckpt-1.safetensors"
    shard.unlink()
    os.mkfifo(shard)
    args = (str(folder),) if reader == "list_variables" else (str(folder), "v")
    outcome = _in_thread(lambda: getattr(tf.train, reader)(*args))
    assert isinstance(outcome.get("error"), ValueError)
    assert "ckpt-1.safetensors (a checkpoint file) is a FIFO" in str(outcome["error"])


BIG_SHARD_WORKER = textwrap.dedent("""
    import json, resource, sys
    import loopax.tf as tf
    with open("/proc/self/status") as f:
        size = next(int(l.split()[1]) for l in f if l.startswith("VmSize")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size + 256 * 2**20, resource.RLIM_INFINITY))
    names = tf.train.list_variables(sys.argv[1])
    small = tf.train.load_variable(sys.argv[1], "v")
    print(json.dumps({"names": names, "v": small.tolist()}))
""")


def test_list_and_load_variable_read_only_what_they_return(tmp_path):
    """A shard holding a 2 GiB value (a sparse file: no disk used) is listed from its
    header and one small value read from it, in a process capped 256 MiB above its
    size: reading the shard whole (as TF's readers never do) would exhaust it."""
    big = 2**31
    header = json.dumps({
        "big": {"dtype": "F32", "shape": [big // 4], "data_offsets": [0, big]},
        "v": {"dtype": "F32", "shape": [2], "data_offsets": [big, big + 8]}}).encode()
    shard = tmp_path / "ckpt-1.safetensors"
    with open(shard, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.seek(big, os.SEEK_CUR)
        f.write(np.array([1.5, -2.0], np.float32).tobytes())
    done = subprocess.run([sys.executable, "-c", BIG_SHARD_WORKER, str(shard)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"names": [["big", [big // 4]], ["v", [2]]], "v": [1.5, -2.0]}


def test_a_state_file_line_that_is_no_entry_warns_naming_the_file(tmp_path):
    """TensorFlow 2.21 logs a state file it cannot parse and restores nothing
    (`latest_checkpoint` gives None); loopax did the same without a word, so a damaged
    state file silently restarted training from scratch (#34's attacker rerun)."""
    folder = tmp_path / "ckpts"
    folder.mkdir()
    (folder / "checkpoint").write_bytes(b'\x00\x01 model_checkpoint_path "\n# a comment\n\n')
    with pytest.warns(UserWarning, match=r"checkpoint \(a checkpoint state file\), line 1: "
                                         r".* ignored") as caught:
        assert tf.train.latest_checkpoint(str(folder)) is None
    assert len([w for w in caught if "state file" in str(w.message)]) == 1  # not the comment
    assert str(folder / "checkpoint") in str(caught[0].message)
    ckpt = _checkpoint(2.0)
    with pytest.warns(UserWarning, match="ignored"):
        manager = tf.train.CheckpointManager(ckpt, str(folder), max_to_keep=1)
        assert manager.restore_or_initialize() is None
    np.testing.assert_array_equal(np.asarray(ckpt.v.value), [2.0, 2.0])


def test_a_state_file_as_tensorflow_writes_it_reads_without_a_warning(tmp_path):
    """TensorFlow 2.21's CheckpointManager (two saves) wrote these lines: the timestamps
    are fields of the format, not damage."""
    folder = tmp_path / "ckpts"
    tf.train.CheckpointManager(_checkpoint(4.0), str(folder), max_to_keep=2).save()
    (folder / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-1"\n'
        'all_model_checkpoint_paths: "ckpt-1"\n'
        "all_model_checkpoint_timestamps: 1796353195.2670465\n"
        "last_preserved_timestamp: 1796353194.035817\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tf.train.latest_checkpoint(str(folder)) == str(folder / "ckpt-1")
