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

With `--model-file`: `model.save`, `load_model`, `save_weights` and `load_weights`
of an MLP of about `--params` weights (45M; compiled, one step trained, so the model
file holds the Adam state too), best of `--repeats`, as MiB/s of the file written or
read: loopax's default (weights stored), `compress=True` (deflated) and Keras 3
(KERAS_BACKEND=jax), each library in a process of its own, in one run. The page
cache holds the files, so this measures the serialization, not the disk.

    python bench/checkpoint.py --model-file [--params 45e6] [--repeats 3]
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


LIBRARIES = {"loopax": {}, "loopax-compress": {"compress": True}, "keras": {}}


def hidden_for(params):
    """The width H of the MLP 784 -> H -> H -> 10 with about `params` weights."""
    return int((-794 + (794 ** 2 + 4 * params) ** 0.5) / 2)


def best_time(repeats, action):
    """The best of `repeats` wall times of `action()`."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def file_speed_worker(library, hidden, repeats, folder):
    """In a process of its own: times the four calls for one library, prints one JSON line
    {call: [seconds, MiB]}."""
    import json
    if library == "keras":
        import keras as lib
    else:
        lib = keras
    save_kwargs = LIBRARIES[library]
    lib.utils.set_random_seed(0)
    model = lib.Sequential([lib.Input((784,)), lib.layers.Dense(hidden, activation="relu"),
                            lib.layers.Dense(hidden, activation="relu"), lib.layers.Dense(10)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    rng = np.random.default_rng(0)
    model.fit(rng.random((32, 784), dtype=np.float32), rng.integers(0, 10, 32), batch_size=32,
              epochs=1, verbose=0)   # the file then holds the Adam state too
    model_path = os.path.join(folder, f"{library}.keras")
    weights_path = os.path.join(folder, f"{library}.weights.h5")
    mib = lambda path: os.path.getsize(path) / 2 ** 20   # noqa: E731
    result = {"params": model.count_params()}
    result["save"] = [best_time(repeats, lambda: model.save(model_path, **save_kwargs)),
                      mib(model_path)]
    result["load_model"] = [best_time(repeats, lambda: lib.models.load_model(model_path)),
                            mib(model_path)]
    if not save_kwargs:
        result["save_weights"] = [best_time(repeats, lambda: model.save_weights(weights_path)),
                                  mib(weights_path)]
        result["load_weights"] = [best_time(repeats, lambda: model.load_weights(weights_path)),
                                  mib(weights_path)]
    print("RESULT " + json.dumps(result))


def model_file_speed(params, repeats, libraries):
    """Prints the MiB/s of model.save, load_model, save_weights and load_weights for each
    library, each run in a fresh process (one library's memory and caches do not slow
    the next)."""
    import json
    import subprocess
    hidden = hidden_for(params)
    folder = tempfile.mkdtemp()
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    rows = {}
    try:
        for library in libraries:
            command = [sys.executable, os.path.abspath(__file__), "--worker", library,
                       "--hidden", str(hidden), "--repeats", str(repeats), "--folder", folder]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
            if done.returncode or not lines:
                print(f"{library}: failed\n{done.stderr[-2000:]}")
                continue
            rows[library] = json.loads(lines[-1][len("RESULT "):])
            for name in os.listdir(folder):
                os.remove(os.path.join(folder, name))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not rows:
        return
    first = next(iter(rows.values()))
    print(f"MLP 784 -> {hidden} -> {hidden} -> 10 ({first['params'] / 1e6:.1f}M parameters), "
          f"Adam state in the model file; best of {repeats}; MiB/s of the file (page cache)")
    calls = ("save", "load_model", "save_weights", "load_weights")
    print(f"{'':>16}" + "".join(f"{c:>22}" for c in calls))
    for library, row in rows.items():
        cells = [f"{row[c][1] / row[c][0]:7.0f} ({row[c][0]:6.2f} s)" if c in row else "-"
                 for c in calls]
        print(f"{library:>16}" + "".join(f"{c:>22}" for c in cells))
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--save-freq", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-file", action="store_true",
                        help="time save/load of model and weights files instead (beside "
                             "Keras's)")
    parser.add_argument("--params", type=float, default=45e6,
                        help="--model-file: the MLP's size in parameters")
    parser.add_argument("--libraries", default="loopax,loopax-compress,keras",
                        help="--model-file: which to time, comma-separated")
    parser.add_argument("--worker", choices=sorted(LIBRARIES), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return file_speed_worker(args.worker, args.hidden, args.repeats, args.folder)
    if args.model_file:
        return model_file_speed(args.params, args.repeats, args.libraries.split(","))
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
