"""A training run for test_backup_and_restore.py, started as a subprocess:

    python backup_training_script.py MODE BACKUP_DIR OUT_FILE
    python backup_training_script.py serve

The training: arrays (on the device), Dropout, shuffle=True, validation data,
EarlyStopping, ReduceLROnPlateau and CSVLogger.
MODE "reference": no BackupAndRestore, nothing slowed down;
     "backup": BackupAndRestore(save_freq=SAVE_FREQ), each 2 steps slowed
               down a little (so a kill lands inside training), progress on
               stdout ("TRAINING" when the first step ran, "WRITING <step>"
               while a backup is renamed into place, held for a moment);
     "finish": as "backup" (the same callbacks, so the same code path), but
               nothing slowed down or held: the run the test lets complete
               (the holds cost it ~15 s of sleep and change no result).

"serve" imports loopax once and starts each run asked for on stdin in a forked child
(see `serve`): a run then starts as a fresh process does after its ~1.5 s of imports.

Writes OUT_FILE.npz (the weights, the History as JSON, the CSV log) when
fit() returns.
"""

import json
import os
import signal
import sys
import threading
import time
import traceback

import numpy as np

import loopax as keras

SAVE_FREQ = 5
EPOCHS = 14


class Pace(keras.callbacks.Callback):
    """Says when training runs and slows it down (chunked: fusion stays on)."""
    batch_hooks = "chunked"
    batch_hooks_freq = 2

    def __init__(self, pause):
        super().__init__()
        self.pause = pause

    def on_train_batch_end(self, batch, logs=None):
        print("TRAINING", batch, flush=True)
        time.sleep(self.pause)


def hold_renames():
    """Announces each backup's final rename and waits a moment before it, so
    the test can kill the process while the backup is half written."""
    from orbax.checkpoint._src.path import async_path
    rename = async_path.rename

    async def announced(src, dst):
        print("WRITING", dst, flush=True)
        time.sleep(0.4)
        return await rename(src, dst)

    async_path.rename = announced


def main(mode, backup_dir, out_file):
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 6)).astype("float32")
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype("int32") + (x[:, 2] > 1).astype("int32")
    model = keras.Sequential([
        keras.Input((6,)), keras.layers.Dense(16, activation="relu"),
        keras.layers.Dropout(0.3), keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.Adam(0.02),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    callbacks = [
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=2, min_delta=0.02),
        keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1,
                                          min_delta=0.01),
        keras.callbacks.CSVLogger(out_file + ".csv")]
    if mode == "backup":
        hold_renames()
    if mode in ("backup", "finish"):
        callbacks += [keras.callbacks.BackupAndRestore(backup_dir, save_freq=SAVE_FREQ),
                      Pace(0.04 if mode == "backup" else 0.0)]
    history = model.fit(x[:88], y[:88], batch_size=8, epochs=EPOCHS, shuffle=True, verbose=0,
                        validation_data=(x[88:], y[88:]), callbacks=callbacks)
    with open(out_file + ".csv") as f:
        csv = f.read()
    np.savez(out_file, *model.get_weights(),
             history=json.dumps([history.epoch, history.history]), csv=csv)
    print("DONE", flush=True)


def serve():
    """Reads "MODE BACKUP_DIR OUT_FILE LOG_FILE" lines on stdin; runs each `main` in a
    forked child, its output in LOG_FILE (ending "EXIT 0" or, after a traceback,
    "EXIT 1"), and prints "STARTED <pid>". Only imports have run here (no JAX backend,
    no thread): each child initialises JAX as a new process does. Ended children are
    reaped at once, so a pid that no longer exists is a run that ended."""
    import orbax.checkpoint  # noqa: F401  (what each child's backups use: imported once)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for line in sys.stdin:
        mode, backup_dir, out_file, log_file = line.split()
        if threading.active_count() != 1:   # a fork copies only this thread: none may run
            raise RuntimeError(f"threads run in the server: {threading.enumerate()}")
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _run_child(mode, backup_dir, out_file, log_file)
        print("STARTED", pid, flush=True)


def _run_child(mode, backup_dir, out_file, log_file):
    log = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)
    code = 1
    try:
        main(mode, backup_dir, out_file)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        print("EXIT", code, flush=True)
        os._exit(code)


if __name__ == "__main__":
    serve() if sys.argv[1:] == ["serve"] else main(*sys.argv[1:4])
