"""`CheckpointStore`: a folder of numbered training checkpoints, written by orbax.

Each checkpoint is a flat `{name: NumPy array}` plus a JSON document
(`meta`), saved under the folder as `<step>/`:

    <step>/arrays/   the arrays (orbax's tensorstore/OCDBT format, no pickle)
    <step>/meta/     the JSON document

orbax writes a checkpoint into a temporary folder and renames it into place
when everything is on disk, so a crash during a write leaves the previous
checkpoints as they were (the half-written temporary folder is removed when
the store is opened again). With `asynchronous=True`, `save` returns once
the arrays are handed over and the files are written by a background thread;
the next `save`, `wait` or `close` waits for it. Only the last `max_to_keep`
checkpoints are kept.

The arrays handed to `save` must not change afterwards (pass copies): the
background thread reads them.

One process at a time: opening the store takes an OS lock (`flock`) on
`<folder>/.lock`, released by `close` (and by the system when the process
ends, a crash included). orbax removes the temporary folders of unfinished
writes when it opens a folder; without the lock a second process would
delete the first one's write in flight. A second store on a locked folder
waits up to `lock_timeout` seconds, then raises `CheckpointFolderInUse`
naming the process that holds it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time

from loopax.src.utils.interrupts import INTERRUPTS_HELD

LOCK_FILE = ".lock"
_held_here: dict[str, object] = {}   # folder -> the store of this process that holds it


class CheckpointFolderInUse(RuntimeError):
    """Another process (or another store of this one) writes to the folder."""


def _orbax():
    try:
        import orbax.checkpoint as ocp
    except ImportError:
        raise ImportError("Training checkpoints (BackupAndRestore) need orbax-checkpoint: "
                          "pip install orbax-checkpoint") from None
    return ocp


class CheckpointStore:
    """Numbered checkpoints in `directory`.

    Args:
        directory: the folder (created when needed); use it for nothing else.
        max_to_keep: how many of the latest checkpoints to keep (older ones
            are deleted after a newer one is complete).
        asynchronous: write in a background thread (`save` blocks only for
            the hand-over).
        lock_timeout: seconds to wait for another process to release the
            folder (None: as long as it takes).
    """

    def __init__(self, directory, max_to_keep=1, asynchronous=True, lock_timeout=0.0):
        if not isinstance(max_to_keep, int) or max_to_keep < 1:
            raise ValueError(f"CheckpointStore: max_to_keep must be a positive int, got "
                             f"{max_to_keep!r}.")
        self.directory = os.path.abspath(os.fspath(directory))
        self.max_to_keep = max_to_keep
        self.asynchronous = bool(asynchronous)
        self.lock_timeout = lock_timeout
        self._manager = None
        self._lock = threading.Lock()
        self._folder_lock = None   # the open lock file while this store holds the folder

    # ---- the folder lock ---------------------------------------------------------
    def _take_folder(self):
        """Takes the folder's lock (waiting up to `lock_timeout`), or raises
        CheckpointFolderInUse naming the holder."""
        holder = _held_here.get(self.directory)
        if holder is not None and holder is not self:
            raise CheckpointFolderInUse(
                f"{self.directory} is already used by another backup store of this process "
                f"(pid {os.getpid()}); finish or close that fit() first, or use another folder.")
        path = os.path.join(self.directory, LOCK_FILE)
        deadline = None if self.lock_timeout is None else time.monotonic() + self.lock_timeout
        while True:
            os.makedirs(self.directory, exist_ok=True)   # (again if the holder deleted it)
            # Taken and recorded with Ctrl-C held: a lock taken but not recorded would
            # stay held by this process, and every later fit() on the folder refused.
            with INTERRUPTS_HELD:
                if self._try_lock(path):
                    return
            if deadline is not None and time.monotonic() >= deadline:
                raise CheckpointFolderInUse(
                    f"{self.directory} is in use by process {_holder_pid(path)} (a fit() "
                    "writing its backups there). Two runs on one folder would delete each "
                    "other's backups in flight: use another folder, stop that process, or "
                    "pass lock_timeout= (seconds; None: as long as it takes) to wait for "
                    "it.")
            time.sleep(0.05)

    def _try_lock(self, path: str) -> bool:
        """Takes and records the lock on `path` if it is free and still the folder's."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        if not (os.path.exists(path) and os.fstat(fd).st_ino == os.stat(path).st_ino):
            os.close(fd)   # the folder was deleted and made again meanwhile: retry
            return False
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._folder_lock = fd
        _held_here[self.directory] = self
        return True

    def _release_folder(self):
        with INTERRUPTS_HELD:   # released and forgotten together
            if self._folder_lock is not None:
                _held_here.pop(self.directory, None)
                os.close(self._folder_lock)   # releases the flock
                self._folder_lock = None

    # ---- the orbax manager, opened on first use ------------------------------
    def _open(self):
        if self._manager is None:
            if self._folder_lock is None:
                self._take_folder()
            ocp = _orbax()
            options = ocp.CheckpointManagerOptions(
                preservation_policy=ocp.checkpoint_managers.LatestN(self.max_to_keep),
                enable_async_checkpointing=self.asynchronous,
                cleanup_tmp_directories=True,   # a write a crash cut short
                create=True)
            self._manager = ocp.CheckpointManager(self.directory, options=options)
        return self._manager

    def steps(self) -> list[int]:
        """The steps of the complete checkpoints, oldest first."""
        if self._manager is None and not os.path.isdir(self.directory):
            return []
        manager = self._open()
        manager.wait_until_finished()   # a save in flight (then older ones are pruned)
        manager.reload()
        return sorted(manager.all_steps())

    def newest_first(self) -> list[int]:
        """The steps of the checkpoints, the most recently written first (by
        the folder's modification time; the higher step first on a tie). A step
        number does not say which was written last: a run resumed from an older
        checkpoint writes lower numbers than the one it skipped."""
        def written(step):
            try:
                return os.stat(os.path.join(self.directory, str(step))).st_mtime_ns
            except OSError:
                return 0
        return sorted(self.steps(), key=lambda step: (written(step), step), reverse=True)

    def delete(self, step: int) -> None:
        """Removes checkpoint `step` (a half-deleted one too)."""
        with self._lock:
            manager = self._open()
            manager.wait_until_finished()
            shutil.rmtree(os.path.join(self.directory, str(step)), ignore_errors=True)
            manager.reload()

    def save(self, step: int, arrays: dict, meta: dict) -> None:
        """Writes checkpoint `step`: `arrays` ({name: np.ndarray}) and `meta`
        (JSON values). A checkpoint `step` that already exists is replaced."""
        ocp = _orbax()
        with self._lock:
            manager = self._open()
            manager.wait_until_finished()
            if step in manager.all_steps():
                manager.delete(step)
            args = ocp.args.Composite(arrays=ocp.args.StandardSave(dict(arrays)),
                                      meta=ocp.args.JsonSave(meta))
            manager.save(int(step), args=args, force=True)

    def restore(self, step: int) -> tuple[dict, dict]:
        """`(arrays, meta)` of checkpoint `step`; the arrays are NumPy arrays."""
        ocp = _orbax()
        manager = self._open()
        manager.wait_until_finished()
        restored = manager.restore(int(step), args=ocp.args.Composite(
            arrays=ocp.args.StandardRestore(), meta=ocp.args.JsonRestore()))
        return dict(restored["arrays"] or {}), dict(restored["meta"])

    def wait(self) -> None:
        """Blocks until the checkpoint being written (if any) is complete."""
        if self._manager is not None:
            self._manager.wait_until_finished()

    def close(self) -> None:
        """Waits for the write in flight, closes orbax and releases the folder."""
        try:
            if self._manager is not None:
                self._manager.wait_until_finished()
                self._manager.close()
                self._manager = None
        finally:
            self._release_folder()

    def delete_all(self) -> None:
        """Removes the folder and every checkpoint in it."""
        if self._manager is not None:
            self._manager.wait_until_finished()
            self._manager.close()
            self._manager = None
        try:
            shutil.rmtree(self.directory, ignore_errors=True)
        finally:
            self._release_folder()


def _holder_pid(path):
    try:
        with open(path) as file:
            return file.read().strip() or "unknown"
    except OSError:
        return "unknown"
