"""Time to build a model: whole fresh processes, loopax and Keras 3 alternating.

Building a model creates its weights (one random draw per kernel) and, for a functional
graph, finds every layer's output shape. Four models, each written once against the
Keras API and built with `import loopax as keras` or `import keras` (JAX backend):

  resnet152v2  keras.applications.ResNet152V2(weights=None): 565 layer calls, 60M weights
  densenet121  keras.applications.DenseNet121(weights=None): 428 layer calls, 8M weights
  mlp          seed 000's MLP 784-64-64-10, functional
  convnet      Keras's mnist_convnet shape (Conv2D 32/64, MaxPooling, Dropout, Dense),
               Sequential

Contenders: loopax with an empty compilation cache ("cold": a fresh LOOPAX_HOME), loopax
again on the cache the cold run left ("warm"; loopax keeps compiled programs across runs
by default), Keras as installed (JAX's persistent cache off, its default), and Keras with
JAX's persistent cache switched on by hand, run once to fill it and timed on the second
run ("keras warm": what loopax's warm run is measured against). Each round runs them in
turn, each process under `timeout`; the table gives medians over rounds (the build alone,
then import + build) and the ratios to Keras as installed.

    python bench/build_model.py [--rounds 3] [--models resnet152v2,densenet121,mlp,convnet]
        [--contenders loopax_cold,loopax_warm,keras,keras_warm]
        [--loopax-path DIR]   # import loopax from another checkout (before/after)
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
t_import = time.perf_counter() - t0
layers, model_name = keras.layers, sys.argv[2]
t1 = time.perf_counter()
if model_name == "resnet152v2":
    model = keras.applications.ResNet152V2(weights=None)
elif model_name == "densenet121":
    model = keras.applications.DenseNet121(weights=None)
elif model_name == "mlp":
    inputs = keras.Input(shape=(784,))
    h = layers.Dense(64, activation="relu")(inputs)
    h = layers.Dense(64, activation="relu")(h)
    model = keras.Model(inputs, layers.Dense(10)(h))
else:
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(), layers.Dropout(0.5), layers.Dense(10, activation="softmax")])
t_build = time.perf_counter() - t1
print(json.dumps({"import": t_import, "build": t_build,
                  "import + build": time.perf_counter() - t0,
                  "params": model.count_params()}))
'''

COLUMNS = ("build", "import + build")
TIMEOUT_S = 900


def run(lib, model, home, loopax_path, jax_cache=False):
    env = dict(os.environ, LOOPAX_HOME=home)
    env.pop("LOOPAX_COMPILATION_CACHE", None)
    if jax_cache:   # JAX's persistent cache, every program kept (as loopax sets it)
        env.update(JAX_COMPILATION_CACHE_DIR=os.path.join(home, "keras-jax-cache"),
                   JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                   JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    if loopax_path:
        env["PYTHONPATH"] = os.pathsep.join([loopax_path, env.get("PYTHONPATH", "")])
    done = subprocess.run(["timeout", str(TIMEOUT_S), sys.executable, "-c", WORKER, lib, model],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{lib} {model} failed (exit {done.returncode}):\n"
                           f"{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def one_round(model, contenders, loopax_path):
    """One measured run of each contender, in a fresh LOOPAX_HOME (and JAX cache)."""
    results = {}
    with tempfile.TemporaryDirectory() as home:
        for name in contenders:
            if name == "keras_warm":
                run("keras", model, home, loopax_path, jax_cache=True)   # fills the cache
            lib = "keras" if name.startswith("keras") else "loopax"
            results[name] = run(lib, model, home, loopax_path, jax_cache=name == "keras_warm")
    return results


def median_of(runs):
    return {c: statistics.median(r[c] for r in runs) for c in COLUMNS}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="resnet152v2,densenet121,mlp,convnet")
    parser.add_argument("--contenders", default="loopax_cold,loopax_warm,keras,keras_warm",
                        help="in the order they run in each round; loopax_warm after "
                             "loopax_cold, and keras for the ratios")
    parser.add_argument("--loopax-path", default=None,
                        help="a checkout to import loopax from (default: the installed one)")
    args = parser.parse_args()
    print(f"# bench/build_model.py, {time.strftime('%Y-%m-%d %H:%M')}, load "
          f"{os.getloadavg()[0]:.1f}, {args.rounds} rounds; seconds, medians")
    print("\n| model | contender | build | import + build | build / Keras | "
          "import + build / Keras |")
    print("|---|---|---:|---:|---:|---:|")
    contenders = args.contenders.split(",")
    for model in args.models.split(","):
        results = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, result in one_round(model, contenders, args.loopax_path).items():
                results[name].append(result)
        params = {r["params"] for runs in results.values() for r in runs}
        if len(params) != 1:
            raise RuntimeError(f"{model}: loopax and Keras built different models ({params}).")
        keras_median = median_of(results["keras"]) if "keras" in results else None
        for name, runs in results.items():
            median = median_of(runs)
            ratios = " | ".join(f"{median[c] / keras_median[c]:.2f}" if keras_median else ""
                                for c in COLUMNS)
            print(
                f"| {model} | {name.replace('_', ' ')} | "
                + " | ".join(f"{median[c]:.2f}" for c in COLUMNS)
                + f" | {ratios} |",
                flush=True,
            )
    print(f"\nload at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
