"""fit() of six Keras models under loopax, Keras 3 on JAX and Keras 3 on TensorFlow.

Each contender runs the same model-building code (`keras` being `loopax`, or
`keras` with KERAS_BACKEND=jax or tensorflow) in its own process, contenders
alternating per workload; TensorFlow runs in another Python (`--tf-python`,
default `$LOOPAX_TF_PYTHON` or /work/tfvenv/bin/python), skipped when it cannot
import tensorflow. Keras-on-JAX is skipped when keras is not installed here. Data
is synthetic (fixed seeds); every model trains with `fit(verbose=0)`:

  mnist_convnet  Keras's example: Conv 32/64 + MaxPool, Dropout, batch 128
  resnet20       CIFAR ResNet-20 (3x3 stages of 16/32/64, BatchNorm), batch 128
  dcgan          tensorflow.org DCGAN's generator (Dense, Conv2DTranspose, BatchNorm)
                 feeding its discriminator, one optimizer, batch 256 (the ops of
                 a generator step; not the tutorial's two-optimizer loop)
  bilstm         Embedding + Bidirectional(LSTM(64)) x2 text classifier, 200 tokens,
                 batch 64
  transformer    Keras's text-classification transformer (1 block, 2 heads),
                 200 tokens, batch 32
  mlp            seed 000's MLP, 784-64-64-10, Adam, batch 32

Per contender and workload: the first epoch's wall time (`--steps` steps, build
excluded, compilation included), the steady ms/step (best of `--epochs` further
epochs), and the process's peak RSS. Ratios are loopax / TF and loopax /
Keras-JAX (below 1: loopax faster).

    python bench/vs_tensorflow.py [--only mnist_convnet,mlp] [--steps 20] [--epochs 3]
        [--contenders loopax,tf] [--repeat 2]

`--repeat N` runs every workload's contenders N times in alternation (loopax, tf,
loopax, tf, ...) and reports each contender's median, with the spread.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ("mnist_convnet", "resnet20", "dcgan", "bilstm", "transformer", "mlp")
BATCH = {"mnist_convnet": 128, "resnet20": 128, "dcgan": 256, "bilstm": 64,
         "transformer": 32, "mlp": 32}


# --------------------------------------------------------------------------
# Models (written once against the Keras 3 API; `keras` is the contender's)
# --------------------------------------------------------------------------

def mnist_convnet(keras, n):
    layers = keras.layers
    model = keras.Sequential([
        keras.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Flatten(), layers.Dropout(0.5),
        layers.Dense(10, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    rng = np.random.default_rng(0)
    return model, rng.random((n, 28, 28, 1), np.float32), one_hot(rng, n, 10)


def resnet20(keras, n):
    layers = keras.layers

    def block(x, filters, stride):
        shortcut = x
        y = layers.Conv2D(filters, 3, stride, padding="same", use_bias=False)(x)
        y = layers.Activation("relu")(layers.BatchNormalization()(y))
        y = layers.Conv2D(filters, 3, padding="same", use_bias=False)(y)
        y = layers.BatchNormalization()(y)
        if stride != 1 or shortcut.shape[-1] != filters:
            shortcut = layers.Conv2D(filters, 1, stride, use_bias=False)(shortcut)
            shortcut = layers.BatchNormalization()(shortcut)
        return layers.Activation("relu")(layers.Add()([y, shortcut]))

    inputs = keras.Input((32, 32, 3))
    x = layers.Conv2D(16, 3, padding="same", use_bias=False)(inputs)
    x = layers.Activation("relu")(layers.BatchNormalization()(x))
    for stage, filters in enumerate((16, 32, 64)):
        for i in range(3):
            x = block(x, filters, 2 if stage and not i else 1)
    outputs = layers.Dense(10)(layers.GlobalAveragePooling2D()(x))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
                  loss=keras.losses.CategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    rng = np.random.default_rng(0)
    return model, rng.random((n, 32, 32, 3), np.float32), one_hot(rng, n, 10)


def dcgan(keras, n):
    layers = keras.layers
    generator = keras.Sequential([
        keras.Input((100,)), layers.Dense(7 * 7 * 256, use_bias=False),
        layers.BatchNormalization(), layers.LeakyReLU(), layers.Reshape((7, 7, 256)),
        layers.Conv2DTranspose(128, 5, padding="same", use_bias=False),
        layers.BatchNormalization(), layers.LeakyReLU(),
        layers.Conv2DTranspose(64, 5, strides=2, padding="same", use_bias=False),
        layers.BatchNormalization(), layers.LeakyReLU(),
        layers.Conv2DTranspose(1, 5, strides=2, padding="same", use_bias=False,
                               activation="tanh")])
    discriminator = keras.Sequential([
        keras.Input((28, 28, 1)), layers.Conv2D(64, 5, strides=2, padding="same"),
        layers.LeakyReLU(), layers.Dropout(0.3),
        layers.Conv2D(128, 5, strides=2, padding="same"), layers.LeakyReLU(),
        layers.Dropout(0.3), layers.Flatten(), layers.Dense(1)])
    model = keras.Sequential([generator, discriminator])
    model.compile(optimizer=keras.optimizers.Adam(1e-4),
                  loss=keras.losses.BinaryCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    return (model, rng.standard_normal((n, 100)).astype(np.float32),
            np.ones((n, 1), np.float32))


def bilstm(keras, n):
    layers = keras.layers
    model = keras.Sequential([
        keras.Input((200,), dtype="int32"), layers.Embedding(20000, 128),
        layers.Bidirectional(layers.LSTM(64, return_sequences=True)),
        layers.Bidirectional(layers.LSTM(64)), layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(0)
    return (model, rng.integers(1, 20000, (n, 200)).astype(np.int32),
            rng.integers(0, 2, (n, 1)).astype(np.float32))


def transformer(keras, n):
    layers, ops = keras.layers, keras.ops
    maxlen, vocab, dim = 200, 20000, 32

    class TokenAndPosition(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.token = layers.Embedding(vocab, dim)
            self.position = layers.Embedding(maxlen, dim)

        def call(self, x):
            return self.token(x) + self.position(ops.arange(0, ops.shape(x)[-1]))

    inputs = keras.Input((maxlen,), dtype="int32")
    x = TokenAndPosition()(inputs)
    attention = layers.MultiHeadAttention(num_heads=2, key_dim=dim)(x, x)
    x = layers.LayerNormalization(epsilon=1e-6)(x + layers.Dropout(0.1)(attention))
    ffn = layers.Dense(dim)(layers.Dense(32, activation="relu")(x))
    x = layers.LayerNormalization(epsilon=1e-6)(x + layers.Dropout(0.1)(ffn))
    x = layers.Dropout(0.1)(layers.GlobalAveragePooling1D()(x))
    x = layers.Dropout(0.1)(layers.Dense(20, activation="relu")(x))
    model = keras.Model(inputs, layers.Dense(2, activation="softmax")(x))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    rng = np.random.default_rng(0)
    return (model, rng.integers(1, vocab, (n, maxlen)).astype(np.int32),
            rng.integers(0, 2, (n,)).astype(np.int32))


def mlp(keras, n):
    layers = keras.layers
    inputs = keras.Input((784,))
    h = layers.Dense(64, activation="relu")(inputs)
    h = layers.Dense(64, activation="relu")(h)
    model = keras.Model(inputs, layers.Dense(10)(h))
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                  loss=keras.losses.CategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    return model, rng.random((n, 784), np.float32), one_hot(rng, n, 10)


def one_hot(rng, n, classes):
    return np.eye(classes, dtype=np.float32)[rng.integers(0, classes, n)]


# --------------------------------------------------------------------------
# One contender, one workload (a worker process)
# --------------------------------------------------------------------------

def measure(library, workload, steps, epochs):
    if library == "loopax":
        import loopax as keras
    else:
        import keras
    keras.utils.set_random_seed(0)
    batch = BATCH[workload]
    model, x, y = globals()[workload](keras, steps * batch)
    times = []

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.perf_counter() - self.start)

    start = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    first = time.perf_counter() - start
    model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, callbacks=[EpochTimer()])
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"first_s": first, "step_ms": min(times) / steps * 1e3, "rss_mb": peak_mb}


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def contenders(tf_python, wanted):
    """name -> (python, environment additions), those wanted that can run here."""
    found = {"loopax": (sys.executable, {"PYTHONPATH": REPO})}
    probe = [sys.executable, "-c", "import keras"]
    if "keras-jax" not in wanted:
        pass
    elif subprocess.run(probe, env=dict(os.environ, KERAS_BACKEND="jax"),
                      capture_output=True).returncode == 0:
        found["keras-jax"] = (sys.executable, {"KERAS_BACKEND": "jax"})
    else:
        print("keras is not installed here: Keras-on-JAX skipped")
    if "tf" not in wanted:
        pass
    elif tf_python and os.path.exists(tf_python) and subprocess.run(
            [tf_python, "-c", "import tensorflow, keras"], capture_output=True,
            env=dict(os.environ, KERAS_BACKEND="tensorflow")).returncode == 0:
        found["tf"] = (tf_python, {"KERAS_BACKEND": "tensorflow"})
    else:
        print(f"no TensorFlow with Keras 3 at {tf_python!r}: TensorFlow skipped")
    return found


def run_worker(python, env_extra, library, workload, steps, epochs):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERAS_BACKEND")}
    env.update(env_extra, TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run([python, os.path.abspath(__file__), "--worker", library, workload,
                          "--steps", str(steps), "--epochs", str(epochs)], env=env,
                         capture_output=True, text=True, cwd="/tmp")
    if out.returncode:
        print(f"  {library} {workload} failed:\n{out.stderr[-2000:]}")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=",".join(WORKLOADS),
                        help=f"comma-separated workloads of {', '.join(WORKLOADS)}")
    parser.add_argument("--steps", type=int, default=40, help="steps per epoch")
    parser.add_argument("--epochs", type=int, default=3,
                        help="steady epochs after the first (the best counts)")
    parser.add_argument("--tf-python",
                        default=os.environ.get("LOOPAX_TF_PYTHON", "/work/tfvenv/bin/python"))
    parser.add_argument("--contenders", default="loopax,keras-jax,tf",
                        help="comma-separated contenders of loopax, keras-jax, tf")
    parser.add_argument("--repeat", type=int, default=1,
                        help="alternating rounds per workload (medians reported)")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(*args.worker, args.steps, args.epochs)))
        return
    chosen = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = sorted(set(chosen) - set(WORKLOADS))
    if unknown:
        parser.error(f"--only: unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    wanted = [c.strip() for c in args.contenders.split(",") if c.strip()]
    unknown = sorted(set(wanted) - {"loopax", "keras-jax", "tf"})
    if unknown or "loopax" not in wanted:
        parser.error(f"--contenders: {unknown or 'loopax missing'}; choose from loopax "
                     "(required), keras-jax, tf")
    found = {n: c for n, c in contenders(args.tf_python, wanted).items() if n in wanted}
    print(f"{args.steps} steps per epoch, best of {args.epochs} steady epochs; "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    runs = {}
    for workload in chosen:
        for rep in range(args.repeat):
            for name, (python, env) in found.items():
                library = "loopax" if name == "loopax" else "keras"
                r = run_worker(python, env, library, workload, args.steps, args.epochs)
                if r:
                    runs.setdefault((workload, name), []).append(r)
                    print(f"  {workload:14s} {name:10s} {r['step_ms']:8.1f} ms/step  first "
                          f"epoch {r['first_s']:6.2f} s  peak RSS {r['rss_mb']:6.0f} MB  "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)
    results = {}
    for key, rs in runs.items():
        results[key] = {k: float(np.median([r[k] for r in rs])) for k in rs[0]}
        if len(rs) > 1:
            steps = sorted(r["step_ms"] for r in rs)
            print(f"  {key[0]:14s} {key[1]:10s} median {results[key]['step_ms']:.1f} ms/step "
                  f"of {len(rs)} (range {steps[0]:.1f}-{steps[-1]:.1f})")
    print(f"load average {os.getloadavg()[0]:.1f} at the end\n")
    names = list(found)
    header = "| workload | " + " | ".join(f"{n} ms/step" for n in names)
    header += " | " + " | ".join(f"{n} first epoch s" for n in names)
    header += " | " + " | ".join(f"{n} RSS MB" for n in names)
    ratios = [n for n in names if n != "loopax"]
    header += "".join(f" | loopax / {n} step | loopax / {n} first" for n in ratios) + " |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for workload in chosen:
        row = [results.get((workload, n)) for n in names]
        cell = lambda r, key, fmt: format(r[key], fmt) if r else "-"
        line = f"| {workload} | " + " | ".join(cell(r, "step_ms", ".1f") for r in row)
        line += " | " + " | ".join(cell(r, "first_s", ".2f") for r in row)
        line += " | " + " | ".join(cell(r, "rss_mb", ".0f") for r in row)
        ours = results.get((workload, "loopax"))
        for n in ratios:
            other = results.get((workload, n))
            for key in ("step_ms", "first_s"):
                line += f" | {ours[key] / other[key]:.2f}x" if ours and other else " | -"
        print(line + " |")


if __name__ == "__main__":
    main()
