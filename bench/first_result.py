"""Time to first result: whole fresh processes, loopax and Keras 3 alternating.

What a person running `python train.py` waits for: import, building the model, the first
epoch (mostly compilation), evaluate, predict, and the whole script. Four small scripts,
each written once against the Keras API and run with `import loopax as keras` or
`import keras` (JAX backend):

  convnet      Keras's mnist_convnet shape: Conv2D 32/64, MaxPooling, Dropout, Dense;
               1,920 samples of 28x28x1, batch 128, validation_split=0.1, 2 epochs
  mlp          seed 000's MLP 784-64-64-10, 8,000 samples, batch 32, validation_split=0.1,
               1 epoch
  lstm         Embedding(2000, 32) + LSTM(32) + Dense, 2,000 sequences of 80 tokens, 1 epoch
  transformer  one transformer block (MultiHeadAttention, LayerNormalization, Dense) over
               64 tokens, 2,000 sequences, 1 epoch

"first epoch" runs from the first epoch's `on_epoch_begin` to its `on_epoch_end`; "to first
epoch" from the `fit()` call to that `on_epoch_end`, the work a library does before the epoch
begins included (Keras's data adapters and callbacks take 0.1-0.2 s there).

After the script (outside its total), the model trains 3 more epochs in the same process and
the last one is the "steady epoch": the first epoch's time over it is what compiling and
loading programs add.

Contenders: loopax with an empty compilation cache ("cold": a fresh LOOPAX_HOME), loopax
run again on the cache the cold run left ("warm"), and Keras. Each round runs the three in
turn in fresh processes; the table gives medians over rounds and the ratios to Keras.

    python bench/first_result.py [--rounds 3] [--workloads convnet,mlp,lstm,transformer]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WORKER = r'''
import json, os, sys, time
t0 = time.perf_counter()
if sys.argv[1] == "keras":
    os.environ["KERAS_BACKEND"] = "jax"
    import keras
else:
    import loopax as keras
import numpy as np
t_import = time.perf_counter() - t0
workload = sys.argv[2]
rng = np.random.default_rng(0)
layers = keras.layers

if workload == "convnet":
    x = rng.random((1920, 28, 28, 1), dtype=np.float32)
    y = keras.utils.to_categorical(rng.integers(0, 10, 1920), 10)
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(), layers.Dropout(0.5), layers.Dense(10, activation="softmax")])
    loss, batch, epochs = "categorical_crossentropy", 128, 2
elif workload == "mlp":
    x = rng.random((8000, 784), dtype=np.float32)
    y = rng.integers(0, 10, 8000)
    inputs = keras.Input(shape=(784,))
    h = layers.Dense(64, activation="relu")(inputs)
    h = layers.Dense(64, activation="relu")(h)
    model = keras.Model(inputs, layers.Dense(10)(h))
    loss, batch, epochs = keras.losses.SparseCategoricalCrossentropy(from_logits=True), 32, 1
elif workload == "lstm":
    x = rng.integers(1, 2000, (2000, 80))
    y = rng.integers(0, 2, 2000)
    model = keras.Sequential([keras.Input(shape=(80,), dtype="int32"),
                              layers.Embedding(2000, 32), layers.LSTM(32),
                              layers.Dense(1, activation="sigmoid")])
    loss, batch, epochs = "binary_crossentropy", 32, 1
else:
    x = rng.integers(1, 2000, (2000, 64))
    y = rng.integers(0, 2, 2000)
    inputs = keras.Input(shape=(64,), dtype="int32")
    h = layers.Embedding(2000, 32)(inputs)
    attended = layers.MultiHeadAttention(num_heads=2, key_dim=32)(h, h)
    h = layers.LayerNormalization(epsilon=1e-6)(h + attended)
    ffn = layers.Dense(32)(layers.Dense(64, activation="relu")(h))
    h = layers.LayerNormalization(epsilon=1e-6)(h + ffn)
    h = layers.GlobalAveragePooling1D()(h)
    model = keras.Model(inputs, layers.Dense(2, activation="softmax")(h))
    loss, batch, epochs = "sparse_categorical_crossentropy", 32, 1
model.compile(optimizer="adam", loss=loss, metrics=["accuracy"])
t_build = time.perf_counter() - t0 - t_import

class EpochTimes(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()
    def on_epoch_end(self, epoch, logs=None):
        self.first = getattr(self, "first", time.perf_counter() - self.start)
        self.to_first = getattr(self, "to_first", time.perf_counter() - t1)

times = EpochTimes()
t1 = time.perf_counter()
history = model.fit(x, y, batch_size=batch, epochs=epochs, validation_split=0.1, verbose=0,
                    callbacks=[times])
t_fit = time.perf_counter() - t1
t1 = time.perf_counter()
model.evaluate(x, y, verbose=0)
t_evaluate = time.perf_counter() - t1
t1 = time.perf_counter()
model.predict(x, verbose=0)
t_predict = time.perf_counter() - t1
t_total = time.perf_counter() - t0

class LastEpoch(keras.callbacks.Callback):   # after the script: a steady epoch
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()
    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.start

last = LastEpoch()
model.fit(x, y, batch_size=batch, epochs=3, validation_split=0.1, verbose=0, callbacks=[last])
print(json.dumps({"import": t_import, "build": t_build, "first epoch": times.first,
                  "to first epoch": times.to_first,
                  "fit": t_fit, "evaluate": t_evaluate, "predict": t_predict,
                  "total": t_total, "steady epoch": last.seconds,
                  "loss": float(history.history["loss"][-1])}))
'''

COLUMNS = ("import", "build", "first epoch", "to first epoch", "fit", "evaluate", "predict",
           "total", "steady epoch")


def run(lib, workload, home):
    env = dict(os.environ, LOOPAX_HOME=home)
    env.pop("LOOPAX_COMPILATION_CACHE", None)
    # Bytecode cached as an installed package's is: without it, a checkout's loopax
    # compiles its sources at every import (0.5 s), Keras (installed) does not.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-c", WORKER, lib, workload], env=env,
                          capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"{lib} {workload} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", default="convnet,mlp,lstm,transformer")
    args = parser.parse_args()
    print(f"# bench/first_result.py, {time.strftime('%Y-%m-%d %H:%M')}, load "
          f"{os.getloadavg()[0]:.1f}, {args.rounds} rounds; seconds, medians")
    for workload in args.workloads.split(","):
        results = {"loopax cold": [], "loopax warm": [], "keras": []}
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as home:
                results["loopax cold"].append(run("loopax", workload, home))
                results["keras"].append(run("keras", workload, home))
                results["loopax warm"].append(run("loopax", workload, home))
        print(f"\n## {workload}\n")
        print("| contender | " + " | ".join(COLUMNS)
              + " | / Keras (first epoch, to it, total) | first / steady epoch |")
        print("|---|" + "---:|" * (len(COLUMNS) + 2))
        keras_median = {c: statistics.median(r[c] for r in results["keras"]) for c in COLUMNS}
        for name, runs in results.items():
            median = {c: statistics.median(r[c] for r in runs) for c in COLUMNS}
            ratio = ", ".join(f"{median[c] / keras_median[c]:.2f}"
                              for c in ("first epoch", "to first epoch", "total"))
            print(f"| {name} | " + " | ".join(f"{median[c]:.2f}" for c in COLUMNS)
                  + f" | {ratio} | {median['first epoch'] / median['steady epoch']:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
