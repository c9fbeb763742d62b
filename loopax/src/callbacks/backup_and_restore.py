"""`BackupAndRestore`: a killed `fit()` continues where it was when run again.

A backup is one checkpoint of a `CheckpointStore` (orbax: atomic, async,
the last one or two kept), named by the global training step it was taken
after. It holds everything the next steps depend on:

- the values of every Variable the training step carries (the model's
  trainable and non-trainable variables, with each layer's SeedGenerator
  state; the optimizer's; the metrics'; the global seed state that
  `seed=None` random ops draw from);
- where training was: the epoch, the step within it, the global step, and
  the seed `fit` draws each epoch's shuffle from (arrays and PyDatasets are
  then read in the same order, starting at the same batch);
- the state of the callbacks that have one (`get_backup_state()` /
  `set_backup_state(state)`: History, EarlyStopping, ReduceLROnPlateau,
  ModelCheckpoint, CSVLogger, TensorBoard), taken after all of them ran
  (BackupAndRestore runs after every other callback).

Running the same script again restores it at the start of `fit`: the model,
optimizer and metric values are assigned, `fit` skips the epochs and steps
already done (`ResumePoint`), and the run ends with the weights and History
of a run never interrupted.
"""

from __future__ import annotations

import warnings

import numpy as np

from loopax.src.api_export import export
from loopax.src.callbacks.callback import Callback, keeps_backup_state
from loopax.src.saving.checkpoint import CheckpointStore

FORMAT = "loopax.backup"


@export("loopax.callbacks.BackupAndRestore")
class BackupAndRestore(Callback):
    """Backs up the training state so that re-running `fit` resumes exactly.

    Args:
        backup_dir: the folder of the backups; use it for nothing else.
        save_freq: "epoch" (after each epoch) or N: after every N training
            steps (fused executions end there; a save that falls on an
            epoch's last step is taken after that epoch's end instead).
        double_checkpoint: keep the previous backup too; if the latest
            cannot be read, training resumes from the previous one.
        delete_checkpoint: delete `backup_dir` when `fit` completes.
        lock_timeout: (loopax) while `fit` runs, the folder is locked against
            other processes; another `fit` on it raises an error naming the
            process that holds it, after waiting this many seconds (None: as
            long as it takes).

    Saves are asynchronous: `fit` waits only while the state is copied to
    host memory; the files are written in the background (see
    docs/saving.md). A crash while a backup is written leaves the previous
    one usable.
    """

    runs_last = True   # sees every hook after the callbacks whose state it saves

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False,
                 delete_checkpoint=True, lock_timeout=0.0):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: `backup_dir` is empty; pass the folder "
                             "to keep the backups in.")
        if save_freq != "epoch" and not (isinstance(save_freq, int)
                                         and not isinstance(save_freq, bool) and save_freq > 0):
            raise ValueError("BackupAndRestore: save_freq must be 'epoch' or a positive "
                             f"number of training steps, got {save_freq!r}.")
        self.backup_dir = backup_dir
        self.save_freq = save_freq
        self.double_checkpoint = bool(double_checkpoint)
        self.delete_checkpoint = bool(delete_checkpoint)
        self.store = CheckpointStore(backup_dir, max_to_keep=2 if double_checkpoint else 1,
                                     lock_timeout=lock_timeout)
        self._others = []
        self._epoch = 0
        self._last_saved = 0
        self._pending = False
        if save_freq != "epoch":
            self.batch_hooks = "chunked"
            self.batch_hooks_freq = save_freq
            self.on_train_batch_end = self._on_train_batch_end

    def set_callback_list(self, callback_list):
        """The other callbacks of this `fit` (their states go into the backup)."""
        self._others = [cb for cb in callback_list.callbacks if cb is not self]

    # ---- restore -----------------------------------------------------------------
    def on_train_begin(self, logs=None):
        try:
            self._begin()
        except BaseException:
            self.store.close()   # fit() will not run: the folder is released
            raise

    def _begin(self):
        self._pending = False
        self._last_saved = 0
        steps = self.store.steps()
        if not steps:
            return
        arrays, meta = self._read()
        if meta.get("format") != FORMAT:
            raise ValueError(f"BackupAndRestore: {self.backup_dir} holds a checkpoint that "
                             "is not a loopax backup; give BackupAndRestore a folder of its own.")
        values = [[arrays[f"state_{g}_{i}"] for i in range(len(group))]
                  for g, group in enumerate(meta["layout"])]
        epoch = meta["epoch"]
        if meta.get("stop_training"):
            epoch = max(epoch, (self.params or {}).get("epochs") or epoch)
        self.training_run.resume_from(ResumePoint(
            epoch, meta["step"], meta["global_step"], meta["data_seed"], values,
            meta["layout"], self.backup_dir,
            lambda: self._restore_callbacks(meta["callbacks"], arrays, quiet=True)))
        self._restore_callbacks(meta["callbacks"], arrays)
        self._epoch = meta["epoch"]
        self._last_saved = meta["global_step"]

    def _read(self):
        """The most recently written backup that can be read. Those that cannot
        (half-deleted by a kill while being replaced, or damaged) are skipped
        with a warning. They, and any older backup numbered above the one
        resumed from, are removed: the next saves are numbered from there, and
        the store would keep the higher numbers instead."""
        skipped = []
        for step in self.store.newest_first():
            try:
                arrays, meta = self.store.restore(step)
            except Exception as error:  # any unreadable file
                warnings.warn(f"BackupAndRestore: the backup of step {step} in "
                              f"{self.backup_dir} cannot be read ({type(error).__name__}: "
                              f"{error}); it is removed and an older one is used.",
                              stacklevel=3)
                skipped.append(step)
                continue
            for other in self.store.steps():
                if other > step and other not in skipped:
                    warnings.warn(f"BackupAndRestore: the backup of step {other} in "
                                  f"{self.backup_dir} is older than that of step {step}; "
                                  "it is removed.", stacklevel=3)
                if other in skipped or other > step:
                    self.store.delete(other)
            return arrays, meta
        raise ValueError(
            f"BackupAndRestore: no backup in {self.backup_dir} can be read (steps "
            f"{skipped}; see the warnings). Delete the folder to start training afresh.")

    def _restore_callbacks(self, saved, arrays, quiet=False):
        mine = [cb for cb in self._others if keeps_backup_state(cb)]
        if not quiet and (len(saved) != len(mine) or any(
                entry["class"] != type(cb).__name__ for entry, cb in zip(saved, mine))):
            warnings.warn(
                "BackupAndRestore: the callbacks with state differ from the backed-up run's "
                f"({[e['class'] for e in saved]} then, {[type(cb).__name__ for cb in mine]} "
                "now); the states of those that match by position and class are restored.",
                stacklevel=3)
        for entry, callback in zip(saved, mine):
            if entry["class"] == type(callback).__name__:
                callback.set_backup_state(_join_arrays(entry["state"], arrays))

    # ---- save ----------------------------------------------------------------
    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def _on_train_batch_end(self, batch, logs=None):
        done = self.training_run.global_step(batch)
        if done // self.save_freq == self._last_saved // self.save_freq:
            return   # no multiple of save_freq reached (executions may be longer)
        if (self.params or {}).get("steps") == batch + 1:
            self._pending = True   # the epoch's last step: saved after its end
            return
        self._save(self._epoch, batch + 1, done)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch" or self._pending:
            self._pending = False
            self._save(epoch + 1, 0, self.training_run.steps_done,
                       stop=bool(getattr(self._model, "stop_training", False)))

    def _save(self, epoch, step, global_step, stop=False):
        self.model   # reading it writes the current values back to the Variables
        arrays, layout = {}, []
        for g, group in enumerate(self.training_run.state_variables):
            for i, variable in enumerate(group):
                arrays[f"state_{g}_{i}"] = np.array(variable.value)   # a host copy
            layout.append([[v.path, list(v.shape), str(v.dtype)] for v in group])
        states = []
        for j, callback in enumerate(cb for cb in self._others if keeps_backup_state(cb)):
            state = _split_arrays(callback.get_backup_state(), arrays, f"callback_{j}")
            states.append({"class": type(callback).__name__, "state": state})
        meta = {"format": FORMAT, "version": 1, "epoch": epoch, "step": step,
                "global_step": int(global_step), "data_seed": int(self.training_run.data_seed),
                "stop_training": stop, "layout": layout, "callbacks": states}
        self.store.save(int(global_step), arrays, meta)
        self._last_saved = global_step

    def on_fit_interrupted(self):
        """`fit` raised: the backup in flight is completed (not left half-written
        for the next run in this process), so the rerun resumes from it; the
        folder is released."""
        self.store.close()

    def on_train_end(self, logs=None):
        if self.delete_checkpoint:
            self.store.delete_all()
        else:
            self.store.close()


class ResumePoint:
    """Where a backed-up `fit` stopped; `fit` consumes it (`TrainingRun.resume_from`)."""

    def __init__(self, epoch, step, global_step, data_seed, values, layout, where,
                 restore_callbacks):
        self.epoch, self.step, self.global_step = epoch, step, global_step
        self._restore_callbacks = restore_callbacks
        self.data_seed = data_seed
        self.values = values
        self.layout = layout
        self.where = where

    def begin(self, adapter, run):
        """Prepares `fit`: returns `(initial_epoch, data_seed)`; an epoch-boundary
        backup's state is assigned now, before the epoch's hooks run."""
        if not adapter.resumable:
            warnings.warn(
                "BackupAndRestore: the training data is a generator or iterator, whose "
                "position cannot be restored; the resumed fit() reads what it yields now "
                f"(skipping {self.step} batch(es) of a resumed epoch), so it is not exactly "
                "the interrupted run. Arrays and PyDatasets resume exactly.", stacklevel=4)
        run.steps_done = self.global_step - self.step
        self._check(run.state_variables)
        if not self.step:
            self._assign(run.state_variables)
        return self.epoch, self.data_seed

    def enter_epoch(self, run):
        """After the resumed epoch's `on_epoch_begin`: a mid-epoch backup's
        values and callback states are put back (as they were at that step,
        whatever the hooks did); returns the step to start at."""
        if self.step:
            self._assign(run.state_variables)
            self._restore_callbacks()
        return self.step

    def _check(self, groups):
        problems = []
        if len(groups) != len(self.layout):
            problems.append(f"{len(self.layout)} groups of state saved, {len(groups)} now")
        for group, saved in zip(groups, self.layout):
            if len(group) != len(saved):
                problems.append(f"{len(saved)} variables saved in a group of {len(group)}")
                continue
            problems += [f"{v.path}: saved {path} {tuple(shape)} {dtype}, model "
                         f"{v.shape} {v.dtype}"
                         for v, (path, shape, dtype) in zip(group, saved)
                         if tuple(shape) != tuple(v.shape) or dtype != str(v.dtype)]
        if problems:
            raise ValueError(
                f"BackupAndRestore: the backup in {self.where} was made by another model or "
                "compile() configuration:\n  " + "\n  ".join(problems[:10]) +
                "\nDelete the folder (or use another backup_dir) to train this model afresh.")

    def _assign(self, groups):
        for group, values in zip(groups, self.values):
            for variable, value in zip(group, values):
                variable.assign(np.asarray(value))


def _split_arrays(state, arrays, prefix):
    """`state` as JSON values: arrays go into `arrays` (a reference stays)."""
    counter = [0]

    def visit(value):
        if hasattr(value, "__array__") and hasattr(value, "shape") and value.shape != ():
            key = f"{prefix}_{counter[0]}"
            counter[0] += 1
            arrays[key] = np.array(value)
            return {"__array__": key}
        if isinstance(value, dict):
            return {str(k): visit(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [visit(v) for v in value]
        if isinstance(value, np.generic) or hasattr(value, "__array__"):
            return np.asarray(value).item()
        return value

    return visit(state)


def _join_arrays(state, arrays):
    if isinstance(state, dict):
        if set(state) == {"__array__"}:
            return arrays[state["__array__"]]
        return {k: _join_arrays(v, arrays) for k, v in state.items()}
    if isinstance(state, list):
        return [_join_arrays(v, arrays) for v in state]
    return state
