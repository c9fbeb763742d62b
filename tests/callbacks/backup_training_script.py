"""A training run for test_backup_and_restore.py, started as a subprocess:

    python backup_training_script.py SCENARIO MODE BACKUP_DIR OUT_FILE

SCENARIO "arrays": arrays on the device, Dropout, shuffle;
         "plateau": a shuffled PyDataset read on the host, validation data,
                    EarlyStopping, ReduceLROnPlateau and CSVLogger.
MODE "reference": no BackupAndRestore, nothing slowed down;
     "backup": BackupAndRestore(save_freq=SAVE_FREQ), each 2 steps slowed
               down a little (so a kill lands inside training), progress on
               stdout ("TRAINING" when the first step ran, "WRITING <step>"
               while a backup is renamed into place, held for a moment).

Writes OUT_FILE (.npz: the weights, and the History and CSV log as JSON)
when fit() returns.
"""

import json
import sys
import time

import numpy as np

import loopax as keras

SAVE_FREQ = 5
EPOCHS = 10


class Rows(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, i):
        rows = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[rows], self.y[rows]


class Pace(keras.callbacks.Callback):
    """Says when training runs and slows it down (chunked: fusion stays on)."""
    batch_hooks = "chunked"
    batch_hooks_freq = 2

    def on_train_batch_end(self, batch, logs=None):
        print("TRAINING", batch, flush=True)
        time.sleep(0.04)


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


def main(scenario, mode, backup_dir, out_file):
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(88, 6)).astype("float32")
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype("int32") + (x[:, 2] > 1).astype("int32")
    model = keras.Sequential([
        keras.Input((6,)), keras.layers.Dense(16, activation="relu"),
        keras.layers.Dropout(0.3), keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.Adam(0.02),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    callbacks = []
    kwargs = {}
    if scenario == "plateau":
        data = (Rows(x[:64], y[:64], 8),)
        kwargs["validation_data"] = (x[64:], y[64:])
        callbacks += [keras.callbacks.EarlyStopping(monitor="val_loss", patience=2,
                                                    min_delta=0.02),
                      keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5,
                                                        patience=1, min_delta=0.02),
                      keras.callbacks.CSVLogger(out_file + ".csv")]
        epochs = 12
    else:
        data = (x, y)
        kwargs["batch_size"] = 8
        epochs = EPOCHS
    if mode == "backup":
        hold_renames()
        callbacks += [keras.callbacks.BackupAndRestore(backup_dir, save_freq=SAVE_FREQ),
                      Pace()]
    history = model.fit(*data, epochs=epochs, shuffle=True, verbose=0, callbacks=callbacks,
                        **kwargs)
    csv = open(out_file + ".csv").read() if scenario == "plateau" else ""
    np.savez(out_file, *model.get_weights(),
             history=json.dumps([history.epoch, history.history]), csv=csv)
    print("DONE", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
