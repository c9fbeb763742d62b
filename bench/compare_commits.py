"""fit() per-step time of two loopax checkouts, alternating processes.

One run of a bench on this shared machine varies by ±20%, which is more than most
changes it is meant to catch. This script compares two checkouts (for example a
`git worktree` of an older commit and the working tree) the way that survives
the noise: `--rounds` pairs of fresh processes, the checkouts alternating; each
process times `fit()` on `fit_mlp.py`'s model ("auto" fusion, best of `--epochs`
epochs after the first) and the fused `lax.scan` floor, three times each, and
prints its best. The summary gives the medians and in how many pairs the new
checkout was faster.

    git worktree add /tmp/old <commit>
    python bench/compare_commits.py /tmp/old . [--rounds 6] [--samples 20000]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))


def measure(samples, epochs):
    """In a worker process: best fit() and floor µs/step for the loopax on sys.path."""
    sys.path.insert(0, BENCH)
    import fit_mlp

    import loopax as keras

    x, y = fit_mlp.make_data(samples)
    steps = -(-samples // fit_mlp.BATCH)

    def fit_us():
        keras.utils.set_random_seed(0)
        inputs = keras.Input(shape=(784,))
        h = keras.layers.Dense(64, activation="relu")(inputs)
        h = keras.layers.Dense(64, activation="relu")(h)
        model = keras.models.Model(inputs, keras.layers.Dense(10)(h))
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                      loss=keras.losses.CategoricalCrossentropy(from_logits=True))
        times = []

        class EpochTimer(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                self.start = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                times.append(time.perf_counter() - self.start)

        model.fit(x, y, batch_size=fit_mlp.BATCH, epochs=epochs + 1, verbose=0,
                  callbacks=[EpochTimer()])
        return min(times[1:]) / steps * 1e6

    fits, floors = [], []
    for _ in range(3):
        fits.append(fit_us())
        floors.append(fit_mlp.floor_us(x, y, epochs))
    print(json.dumps({"fit": min(fits), "floor": min(floors)}))


def run_worker(checkout, samples, epochs):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    out = subprocess.run([sys.executable, __file__, "--worker", "--samples", str(samples),
                          "--epochs", str(epochs)], env=env, capture_output=True, text=True,
                         cwd=os.path.abspath(checkout), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("old", nargs="?", help="checkout of the older commit")
    parser.add_argument("new", nargs="?", help="checkout of the newer commit")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        measure(args.samples, args.epochs)
        return
    if not (args.old and args.new):
        parser.error("give two checkouts: OLD NEW")
    results = {"old": [], "new": []}
    for r in range(args.rounds):
        for name, path in (("old", args.old), ("new", args.new)):
            res = run_worker(path, args.samples, args.epochs)
            results[name].append(res)
            print(f"round {r + 1} {name}: fit {res['fit']:.1f} µs/step, floor {res['floor']:.1f},"
                  f" ratio {res['fit'] / res['floor']:.3f}", flush=True)
    for name in ("old", "new"):
        fits = [r["fit"] for r in results[name]]
        ratios = [r["fit"] / r["floor"] for r in results[name]]
        print(f"{name}: median fit {statistics.median(fits):.1f} µs/step, "
              f"median fit/floor {statistics.median(ratios):.3f}")
    faster = sum(n["fit"] < o["fit"] for o, n in zip(results["old"], results["new"]))
    print(f"new faster in {faster} of {args.rounds} pairs")


if __name__ == "__main__":
    main()
