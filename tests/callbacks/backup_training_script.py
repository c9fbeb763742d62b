"""A training run for test_backup_and_restore.py, started as a subprocess:

    python backup_training_script.py MODE BACKUP_DIR OUT_FILE [wait]

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

With "wait", the run prints "READY" once loopax is imported and the model built, and
starts training when a line comes on stdin: the test starts the next run while this
one trains, so that the next one's ~2 s of imports are not waited for.

Writes OUT_FILE.npz (the weights, the History as JSON, the CSV log) when
fit() returns.
"""

import json
import sys
import time

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


def main(mode, backup_dir, out_file, wait=None):
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
    if wait == "wait":
        print("READY", flush=True)
        sys.stdin.readline()
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


if __name__ == "__main__":
    main(*sys.argv[1:5])
