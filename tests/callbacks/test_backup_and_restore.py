"""BackupAndRestore: a training process killed with SIGKILL (at random
moments, and while a backup is being written) and started again until it
completes ends with the same weights, History and CSV log, bit for bit, as
a run never interrupted (Dropout, shuffle, EarlyStopping and
ReduceLROnPlateau on). The training runs are processes forked by
`backup_training_script.py serve` (loopax imported once for all); the other
tests resume in-process after an exception."""

import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import loopax as keras
from loopax.src.saving.checkpoint import CheckpointStore

SCRIPT = Path(__file__).with_name("backup_training_script.py")
ROOT = Path(__file__).resolve().parents[2]


def _serve():
    """A `backup_training_script.py serve` process (its errors go to the test's stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu",
               PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, str(SCRIPT), "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)


class _Lines:
    """The subprocess's output lines, read on a thread; `wait_for(prefix)`."""

    def __init__(self, process):
        self.lines = []
        self._new = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process):
        for line in process.stdout:
            with self._new:
                self.lines.append(line.rstrip("\n"))
                self._new.notify_all()
        with self._new:
            self.lines.append(None)   # end of output
            self._new.notify_all()

    def wait_for(self, prefix, timeout=120):
        deadline = time.monotonic() + timeout
        with self._new:
            seen = 0
            while True:
                for line in self.lines[seen:]:
                    if line is None:
                        return None
                    if line.startswith(prefix):
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no line starting with {prefix!r}: {self.lines[-20:]}")
                self._new.wait(left)

    def text(self):
        self._thread.join(timeout=10)
        return "\n".join(line for line in self.lines if line is not None)


class _Runs:
    """Training runs forked from one `backup_training_script.py serve` process, which
    imports loopax once (a run then starts as a new process does after ~1.5 s of
    imports; the kill test makes five)."""

    def __init__(self, folder):
        self.folder, self.pids = folder, []
        self.server = _serve()

    def start(self, mode, backup_dir, out_file):
        """A run of `mode`; its pid and its `_Log`."""
        log = self.folder / f"run-{len(self.pids)}.log"
        self.server.stdin.write(f"{mode} {backup_dir} {out_file} {log}\n")
        self.server.stdin.flush()
        started = self.server.stdout.readline()
        assert started.startswith("STARTED"), f"the server answered {started!r}"
        self.pids.append(int(started.split()[1]))
        return self.pids[-1], _Log(log, self.pids[-1])

    def close(self):
        for pid in self.pids:
            _kill(pid)
        self.server.kill()
        self.server.wait()


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill(pid, timeout=60):
    """SIGKILLs a run and waits until it is gone (the server reaps it)."""
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while _alive(pid):
        assert time.monotonic() < deadline, f"run {pid} still there after SIGKILL"
        time.sleep(0.01)


class _Log:
    """A run's output as it grows; `wait_for(prefix)` as `_Lines.wait_for`."""

    def __init__(self, path, pid):
        self.path, self.pid = path, pid

    def lines(self):
        return self.path.read_text().splitlines() if self.path.exists() else []

    def wait_for(self, prefix, timeout=300):
        deadline = time.monotonic() + timeout
        while True:
            ended = not _alive(self.pid)   # read before the lines: none comes after
            found = [line for line in self.lines() if line.startswith(prefix)]
            if found or ended:
                return found[0] if found else None
            if time.monotonic() > deadline:
                raise TimeoutError(f"no line starting with {prefix!r}: {self.lines()[-20:]}")
            time.sleep(0.01)

    def text(self):
        return "\n".join(self.lines())


def _kill_and_resume(runs, tmp_path, kills):
    """Runs the training with kills as planned ("second write": while the second
    backup is renamed into place, so the next run resumes mid-epoch from the first;
    a float: that many seconds into training), then
    again until it completes. Returns the result file and the kill log."""
    backup_dir, out = tmp_path / "backup", tmp_path / "resumed"
    log = []
    for plan in kills:
        pid, lines = runs.start("backup", backup_dir, out)
        try:
            assert lines.wait_for("TRAINING") is not None, lines.text()
            if plan == "second write":   # backups every 5 steps: the second is step 10's
                assert lines.wait_for(f"WRITING {backup_dir / '10'}") is not None, lines.text()
            else:
                time.sleep(plan)
        finally:
            _kill(pid)
        output = lines.text()
        assert "DONE" not in output, "the run completed before it was killed: " + output
        tmp_dirs = [p.name for p in backup_dir.glob("*orbax-checkpoint-tmp*")]
        complete = sorted(p.name for p in backup_dir.glob("*") if p.name.isdigit())
        log.append((plan, tmp_dirs, complete))
    for _ in range(5):
        _, lines = runs.start("finish", backup_dir, out)
        assert lines.wait_for("EXIT") == "EXIT 0", lines.text()
        if "DONE" in lines.text():
            break
    assert not backup_dir.exists(), "the backup is deleted when fit() completes"
    return out, log


def _load(path):
    with np.load(str(path) + ".npz") as data:
        weights = [data[f"arr_{i}"] for i in range(len(data.files) - 2)]
        return weights, json.loads(str(data["history"])), str(data["csv"])


def test_killed_training_resumes_bit_for_bit(tmp_path):
    runs = _Runs(tmp_path)
    try:
        _, reference = runs.start("reference", tmp_path / "unused", tmp_path / "reference")
        moments = random.Random(7)
        kills = ["second write"] + [moments.uniform(0.0, 0.4) for _ in range(2)]
        out, log = _kill_and_resume(runs, tmp_path, kills)
        assert reference.wait_for("EXIT") == "EXIT 0", reference.text()
    finally:
        runs.close()
    # The kill during the second write left the half-written backup behind, and
    # the first complete: the next run resumed mid-epoch from it.
    assert log[0][1] and log[0][2], log
    weights, (epochs, history), csv = _load(out)
    ref_weights, (ref_epochs, ref_history), ref_csv = _load(tmp_path / "reference")
    # The callbacks acted: the learning rate was cut, training stopped early.
    assert min(ref_history["learning_rate"]) < ref_history["learning_rate"][0]
    assert len(ref_epochs) < 14
    # ... and made the same decisions at the same epochs after the kills.
    assert epochs == ref_epochs
    assert history == ref_history
    assert csv == ref_csv
    for got, expected in zip(weights, ref_weights, strict=True):
        np.testing.assert_array_equal(got, expected)


def _model():
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dropout(0.25), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    return model


class _Crash(keras.callbacks.Callback):
    def __init__(self, at_step):
        super().__init__()
        self.at_step, self.steps = at_step, 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if self.steps == self.at_step:
            raise KeyboardInterrupt


class _Rows(keras.utils.PyDataset):
    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return self.x[8 * i:8 * i + 8], self.y[8 * i:8 * i + 8]


def _data(data):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(40, 4)).astype("float32"), rng.normal(size=(40, 1)).astype("float32")
    if data == "arrays":
        return (x, y), dict(batch_size=8)
    return (_Rows(x, y),), {}


@functools.cache
def _uninterrupted(data):
    args, kwargs = _data(data)
    model = _model()
    history = model.fit(*args, epochs=4, verbose=0, **kwargs).history
    return history, model.get_weights()


@pytest.mark.parametrize("data, save_freq, crash_at", [
    ("arrays", "epoch", 11),     # an epoch-boundary backup, crash mid-epoch 2
    ("arrays", 3, 8),            # mid-epoch backup (arrays on the device)
    ("pydataset", 2, 10),        # mid-epoch backup (shuffled PyDataset, host path)
])
def test_resume_in_the_same_process_after_an_exception(tmp_path, data, save_freq, crash_at):
    args, kwargs = _data(data)
    expected, expected_weights = _uninterrupted(data)
    model = _model()
    backup = keras.callbacks.BackupAndRestore(tmp_path / "b", save_freq=save_freq,
                                              delete_checkpoint=False)
    with pytest.raises(KeyboardInterrupt):
        model.fit(*args, epochs=4, verbose=0, callbacks=[backup, _Crash(crash_at)], **kwargs)
    history = model.fit(*args, epochs=4, verbose=0, callbacks=[backup], **kwargs).history
    assert history == expected
    for got, want in zip(model.get_weights(), expected_weights, strict=True):
        np.testing.assert_array_equal(got, want)
    assert (tmp_path / "b").exists()   # delete_checkpoint=False keeps it


def test_a_new_callback_on_the_folder_resumes_after_an_exception(tmp_path):
    """A rerun notebook cell: a fresh BackupAndRestore on the folder the
    interrupted fit was writing to (its last save finished, not left half-written)."""
    args, kwargs = _data("arrays")
    expected, expected_weights = _uninterrupted("arrays")
    model = _model()
    with pytest.raises(KeyboardInterrupt):
        model.fit(*args, epochs=4, verbose=0, callbacks=[
            keras.callbacks.BackupAndRestore(tmp_path / "b", save_freq=3), _Crash(8)], **kwargs)
    rerun = keras.callbacks.BackupAndRestore(tmp_path / "b", save_freq=3)
    history = model.fit(*args, epochs=4, verbose=0, callbacks=[rerun], **kwargs).history
    assert history == expected
    for got, want in zip(model.get_weights(), expected_weights, strict=True):
        np.testing.assert_array_equal(got, want)


class _StepCounter(keras.callbacks.Callback):
    """A user's callback with state to resume: the training steps it has seen."""

    def __init__(self):
        super().__init__()
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1

    def get_backup_state(self):
        return {"steps": self.steps}

    def set_backup_state(self, state):
        self.steps = state["steps"]


class _RestoreOnly(keras.callbacks.Callback):
    """Half the contract (no `get_backup_state`): nothing to keep, and no slot taken."""

    def set_backup_state(self, state):
        raise AssertionError("never called: this callback keeps no backup state")


def test_a_user_callback_with_backup_state_continues_where_it_stopped(tmp_path):
    args, kwargs = _data("arrays")
    counter = _StepCounter()
    model = _model()
    backup = keras.callbacks.BackupAndRestore(tmp_path / "b", save_freq=3)
    with pytest.raises(KeyboardInterrupt):
        model.fit(*args, epochs=4, verbose=0, callbacks=[_RestoreOnly(), counter, backup,
                                                         _Crash(8)], **kwargs)
    resumed = _StepCounter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the states line up: no "callbacks differ" warning
        model.fit(*args, epochs=4, verbose=0, callbacks=[_RestoreOnly(), resumed, backup],
                  **kwargs)
    assert keras.callbacks.Callback().get_backup_state() is None
    assert resumed.steps == 4 * 5   # 6 before the backup of step 6, 14 after the resume


def test_a_backup_of_another_model_is_refused_with_a_clear_error(tmp_path):
    x, y = np.ones((16, 4), "float32"), np.ones((16, 1), "float32")
    backup = keras.callbacks.BackupAndRestore(tmp_path / "b", delete_checkpoint=False)
    _model().fit(x, y, epochs=1, verbose=0, callbacks=[backup])
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    other.compile(optimizer="adam", loss="mse")
    with pytest.raises(ValueError, match="made by another model"):
        other.fit(x, y, epochs=2, verbose=0, callbacks=[backup])


@pytest.mark.parametrize("save_freq", [0, -1, "batch", 1.5, True])
def test_bad_save_freq_is_refused(tmp_path, save_freq):
    with pytest.raises(ValueError, match="save_freq must be 'epoch' or a positive"):
        keras.callbacks.BackupAndRestore(tmp_path, save_freq=save_freq)


def _labels_and_saved_steps(backup_dir):
    """{folder label: the optimizer's iteration count saved in that backup}."""
    store = CheckpointStore(backup_dir)
    found = {}
    for step in store.steps():
        arrays, meta = store.restore(step)
        (g, i), = [(g, i) for g, group in enumerate(meta["layout"])
                   for i, (path, _, _) in enumerate(group) if path.endswith("/iteration")]
        found[step] = int(arrays[f"state_{g}_{i}"])
        assert meta["global_step"] == step
    store.close()
    return found


@pytest.mark.parametrize("double_checkpoint", [False, True], ids=["one-kept", "two-kept"])
def test_resume_after_resume_after_resume_names_backups_by_the_true_step(
        tmp_path, double_checkpoint):
    """Three mid-epoch interrupts in a row (5 steps an epoch, a backup every 3):
    each backup's folder is named by the number of steps the optimizer had taken,
    and the last run ends as an uninterrupted one."""
    args, kwargs = _data("arrays")
    expected, expected_weights = _uninterrupted("arrays")
    model = _model()
    # Steps into each run; the crash comes before that step's backup. Globally:
    # 7 (resumed from 6), 6 + 6 = 12 (from 9), 9 + 5 = 14 (from 12).
    for crash_at in (7, 6, 5):
        backup = keras.callbacks.BackupAndRestore(tmp_path / "b", save_freq=3,
                                                  double_checkpoint=double_checkpoint)
        with pytest.raises(KeyboardInterrupt):
            model.fit(*args, epochs=4, verbose=0, callbacks=[backup, _Crash(crash_at)],
                      **kwargs)
        saved = _labels_and_saved_steps(tmp_path / "b")
        assert saved and all(label == steps for label, steps in saved.items()), saved
        assert len(saved) == (2 if double_checkpoint else 1)
    assert max(saved) == 12
    backup = keras.callbacks.BackupAndRestore(tmp_path / "b", save_freq=3,
                                              double_checkpoint=double_checkpoint)
    history = model.fit(*args, epochs=4, verbose=0, callbacks=[backup], **kwargs).history
    assert history == expected
    for got, want in zip(model.get_weights(), expected_weights, strict=True):
        np.testing.assert_array_equal(got, want)


def _half_delete(folder):
    """What a kill in the middle of `rmtree(folder)` leaves: some files gone."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    for path in files[::2]:
        path.unlink()


@pytest.mark.parametrize("double_checkpoint", [False, True], ids=["one-kept", "two-kept"])
def test_a_half_deleted_backup_numbered_higher_is_skipped(tmp_path, double_checkpoint):
    """A kill while the previous backup was deleted leaves it half there. Even
    numbered above the complete one (as backups mislabelled by an older loopax
    were), the resume uses the complete one, warns, and ends as an
    uninterrupted run."""
    args, kwargs = _data("arrays")
    expected, expected_weights = _uninterrupted("arrays")
    model = _model()
    backup = keras.callbacks.BackupAndRestore(tmp_path / "b", save_freq=3,
                                              double_checkpoint=double_checkpoint)
    with pytest.raises(KeyboardInterrupt):
        model.fit(*args, epochs=4, verbose=0, callbacks=[backup, _Crash(8)], **kwargs)
    newest = max(_labels_and_saved_steps(tmp_path / "b"))
    shutil.copytree(tmp_path / "b" / str(newest), tmp_path / "b" / "27")
    _half_delete(tmp_path / "b" / "27")
    backup = keras.callbacks.BackupAndRestore(tmp_path / "b", save_freq=3,
                                              double_checkpoint=double_checkpoint)
    with pytest.warns(UserWarning, match="backup of step 27 .* cannot be read"):
        history = model.fit(*args, epochs=4, verbose=0, callbacks=[backup], **kwargs).history
    assert history == expected
    for got, want in zip(model.get_weights(), expected_weights, strict=True):
        np.testing.assert_array_equal(got, want)


_HOLDER = """
import sys
import numpy as np
import loopax as keras

class Hold(keras.callbacks.Callback):
    held = False

    def on_train_batch_end(self, batch, logs=None):
        if batch == 1 and not self.held:
            self.held = True
            print("HOLDING", flush=True)
            sys.stdin.readline()   # until the test says go on

x, y = np.ones((16, 4), "float32"), np.ones((16, 1), "float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, batch_size=4, epochs=2, verbose=0,
          callbacks=[keras.callbacks.BackupAndRestore(sys.argv[1], save_freq=1), Hold()])
print("DONE", flush=True)
"""


def _start_holder(backup_dir):
    """A fit() in another process that will pause inside training with a backup being
    written to `backup_dir` (`_holding` waits until it does)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(backup_dir)], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    return holder, _Lines(holder)


def _holding(holder, lines):
    assert lines.wait_for("HOLDING") is not None, lines.text()
    return holder, lines


def _fit_on(backup_dir, **kwargs):
    x, y = np.ones((16, 4), "float32"), np.ones((16, 1), "float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    backup = keras.callbacks.BackupAndRestore(backup_dir, save_freq=1, **kwargs)
    return model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[backup])


def test_a_second_process_gets_a_clear_error_or_waits_and_a_killed_holder_releases_it(
        tmp_path):
    """Two holders start together (a holder process spends ~2 s importing; side by side
    they import at once). One serves both callers: a fit() on its folder is refused
    naming the holder; one with lock_timeout waits until the holder's fit ends
    (released then), and the holder finishes undisturbed. The other is killed with
    SIGKILL while it holds its folder, which a fit() then uses."""
    first, second = _start_holder(tmp_path / "b"), _start_holder(tmp_path / "killed")
    try:
        holder, lines = _holding(*first)
        release = threading.Timer(
            1.0, lambda: (holder.stdin.write("go on\n"), holder.stdin.flush()))
        try:
            with pytest.raises(RuntimeError, match=f"in use by process {holder.pid}"):
                _fit_on(tmp_path / "b")
            release.start()
            started = time.monotonic()
            history = _fit_on(tmp_path / "b", lock_timeout=120)
            assert time.monotonic() - started >= 0.9   # it waited for the holder
            assert len(history.history["loss"]) == 2
            holder.wait(timeout=120)
        finally:
            release.cancel()
        assert holder.returncode == 0 and "DONE" in lines.text(), lines.text()

        killed, _ = _holding(*second)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=60)
        assert len(_fit_on(tmp_path / "killed").history["loss"]) == 2
    finally:
        for process, _ in (first, second):
            process.kill()
            process.wait()
