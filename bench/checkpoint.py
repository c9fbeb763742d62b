"""The stall a BackupAndRestore checkpoint adds to training, sync vs async.

Model: an MLP 784 -> H -> H -> 10 (relu), Adam (state = 3x the weights),
batch 128, synthetic data. Three fits of the same length, alternated
`--repeats` times (the best of each counts):

- none:  no checkpoint;
- async: BackupAndRestore(save_freq=N): orbax writes in the background;
- sync:  the same, with the writes finished inside the save.

The stall per checkpoint is (fit time - the "none" fit time) / checkpoints.
The time `fit` spends inside the save call (the state copied to host
memory, handed to orbax) is measured too.

    python bench/checkpoint.py [--hidden 1024] [--steps 400] [--save-freq 50]

With `--model-file`: `model.save` / `load_model` of the same MLP (compiled,
one step trained, so the file holds the Adam state too), best of `--repeats`,
as MB/s of the file written or read: loopax's default (weights stored),
`compress=True` (deflated), and Keras 3 (KERAS_BACKEND=jax) beside them when it
is installed. The machine's page cache holds the files, so this measures the
serialization, not the disk.

    python bench/checkpoint.py --model-file [--hidden 1024] [--repeats 3]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")   # Keras, when installed, as the reference
import loopax as keras
from loopax.src.saving.checkpoint import CheckpointStore


def build(hidden):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(hidden, activation="relu"),
                              keras.layers.Dense(hidden, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


class SaveTimer(keras.callbacks.BackupAndRestore):
    """BackupAndRestore that adds up the time spent in its saves."""

    def __init__(self, *args, asynchronous=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.store = CheckpointStore(self.backup_dir, asynchronous=asynchronous)
        self.seconds, self.saves = 0.0, 0

    def _save(self, *args, **kwargs):
        start = time.perf_counter()
        super()._save(*args, **kwargs)
        self.seconds += time.perf_counter() - start
        self.saves += 1


def run(model, x, y, mode, folder, save_freq):
    callbacks = []
    if mode != "none":
        shutil.rmtree(folder, ignore_errors=True)
        callbacks = [SaveTimer(folder, save_freq=save_freq, asynchronous=mode == "async")]
    start = time.perf_counter()
    model.fit(x, y, batch_size=128, epochs=1, shuffle=True, verbose=0, callbacks=callbacks)
    seconds = time.perf_counter() - start   # includes on_train_end (waits for the last write)
    return seconds, callbacks[0] if callbacks else None


def model_file_speed(hidden, repeats):
    """Prints save/load MB/s of loopax's model files (stored, deflated) and Keras's."""
    libraries = [("loopax", keras, {}), ("loopax compress=True", keras, {"compress": True})]
    try:
        import keras as real_keras
        if real_keras.backend.backend() == "jax":
            libraries.append((f"keras {real_keras.__version__}", real_keras, {}))
    except ImportError:
        pass
    rng = np.random.default_rng(0)
    x, y = rng.random((128, 784), dtype=np.float32), rng.integers(0, 10, 128)
    folder = tempfile.mkdtemp()
    print(f"MLP 784 -> {hidden} -> {hidden} -> 10 with Adam state; best of {repeats}")
    for label, lib, save_kwargs in libraries:
        lib.utils.set_random_seed(0)
        model = lib.Sequential([lib.Input((784,)), lib.layers.Dense(hidden, activation="relu"),
                                lib.layers.Dense(hidden, activation="relu"),
                                lib.layers.Dense(10)])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        model.fit(x, y, batch_size=128, epochs=1, verbose=0)
        path = os.path.join(folder, label.split()[0] + ".keras")
        save = load = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            model.save(path, **save_kwargs)
            save = min(save, time.perf_counter() - start)
            start = time.perf_counter()
            loaded = lib.models.load_model(path)
            load = min(load, time.perf_counter() - start)
        del loaded
        mb = os.path.getsize(path) / 2 ** 20
        print(f"{label:>22}: file {mb:7.1f} MiB; save {save:6.3f} s ({mb / save:7.1f} MiB/s); "
              f"load {load:6.3f} s ({mb / load:7.1f} MiB/s)")
        sys.stdout.flush()
    shutil.rmtree(folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--save-freq", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-file", action="store_true",
                        help="time model.save/load_model instead (beside Keras's)")
    args = parser.parse_args()
    if args.model_file:
        return model_file_speed(args.hidden, args.repeats)
    rng = np.random.default_rng(0)
    n = args.steps * 128
    x = rng.random((n, 784), dtype=np.float32)
    y = rng.integers(0, 10, n)
    model = build(args.hidden)
    folder = os.path.join(tempfile.mkdtemp(), "backup")
    state_mb = sum(np.asarray(v.value).nbytes for v in model.variables) * 3 / 2 ** 20
    run(model, x[:2560], y[:2560], "async", folder, args.save_freq)   # compile, import orbax
    best = {}
    spent = {}
    for _ in range(args.repeats):
        for mode in ("none", "async", "sync"):
            seconds, timer = run(model, x, y, mode, folder, args.save_freq)
            if seconds < best.get(mode, float("inf")):
                best[mode] = seconds
                if timer is not None:
                    spent[mode] = (timer.seconds / timer.saves, timer.saves)
    print(f"state ~{state_mb:.1f} MiB (weights + Adam), {args.steps} steps, "
          f"a checkpoint every {args.save_freq} steps")
    base = best["none"]
    print(f"none : {base:.3f} s ({1e3 * base / args.steps:.2f} ms/step)")
    for mode in ("async", "sync"):
        per_save, saves = spent[mode]
        stall = (best[mode] - base) / saves
        print(f"{mode}: {best[mode]:.3f} s ({best[mode] / base:.2f}x none); stall per "
              f"checkpoint {1e3 * stall:.1f} ms; inside the save call {1e3 * per_save:.1f} ms")


if __name__ == "__main__":
    main()
