"""`python -m loopax.demo`: the first five minutes with loopax, offline and on CPU.

Trains seed 000's MLP (Dense 64 relu, Dense 64 relu, Dense 10 logits; 64 inputs here,
the bundled 8x8 digits, instead of MNIST's 784) with `fit()` and its progress bar,
evaluates it, saves it and loads it back (checking the reloaded predictions match),
writes the training history as a PNG and prints what to read next.

    python -m loopax.demo [--epochs 10] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from loopax.src.datasets import digits
from loopax.src.layers.core.dense import Dense
from loopax.src.layers.input_layer import Input
from loopax.src.losses.losses import SparseCategoricalCrossentropy
from loopax.src.models.model import Model
from loopax.src.optimizers import Adam
from loopax.src.random import set_random_seed
from loopax.src.saving.saving_api import load_model

# The same program with public names (`import loopax as keras`) is docs/guides/getting_started.md.

NEXT_STEPS = """\
Read next (in docs/guides/, Korean in docs/ko/):
  getting_started.md           this demo, line by line
  training_loop_from_scratch.md  a stateless loop with jax.jit (seed 000)
  tape_and_function.md          GradientTape, loopax.function, custom_gradient (seed 001)
  jax_basics.md                 jax.grad, jax.jit and pytrees on loopax (seed 002)
  basic_training_loop.md        from Module and Variable to fit() (seed 003)
  customizing_fit.md            your own train_step inside fit() (seed 004)
  migrating_from_keras.md, migrating_from_tf_keras.md
"""


def get_model():
    """Seed 000's MLP with the digits' 64 features as input: (batch, 64) -> (batch, 10) logits."""
    inputs = Input(shape=(64,), name="digits")
    x = Dense(64, activation="relu")(inputs)
    x = Dense(64, activation="relu")(x)
    outputs = Dense(10, name="predictions")(x)
    return Model(inputs=inputs, outputs=outputs)


def load_digits():
    """The bundled digits as float32 (n, 64) in [0, 1] and int labels (n,)."""
    (x_train, y_train), (x_test, y_test) = digits.load_data()
    x_train = x_train.reshape(-1, 64).astype("float32") / 16
    x_test = x_test.reshape(-1, 64).astype("float32") / 16
    return (x_train, y_train.astype("int32")), (x_test, y_test.astype("int32"))


def plot_history(history, path):
    """Writes `history.plot()` to `path`.

    Returns False (and says how to fix it) without matplotlib.
    """
    try:
        import matplotlib
    except ImportError:
        print("No plot: matplotlib is not installed. Install it with: pip install 'loopax[plot]'")
        return False
    matplotlib.use("Agg")   # no display needed
    figure = history.plot()
    figure.savefig(path, dpi=80)
    import matplotlib.pyplot as plt
    plt.close(figure)
    return True


def main(argv=None):
    """Runs the demo: trains, evaluates, saves and reloads, plots, prints what to read next.

    Args:
        argv: command-line arguments (`["--epochs", "3", "--out", "dir"]`); None reads
            `sys.argv`.

    Returns:
        dict with `model` (the trained Model), `history` (name -> per-epoch values),
        `test` (evaluate()'s dict), `model_path` and `plot_path` (None without matplotlib).

    Raises:
        RuntimeError: if the reloaded model predicts differently from the trained one.
    """
    parser = argparse.ArgumentParser(
        prog="python -m loopax.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--epochs", type=int, default=10, help="training epochs (default 10)")
    parser.add_argument(
        "--out",
        default=None,
        help="folder for the model file and the plot (default: a new temporary folder)",
    )
    args = parser.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="loopax-demo-")
    os.makedirs(out, exist_ok=True)

    set_random_seed(0)
    (x_train, y_train), (x_test, y_test) = load_digits()
    print(f"Digits: {len(x_train)} training and {len(x_test)} test images, 64 pixels each.\n")

    model = get_model()
    model.compile(optimizer=Adam(learning_rate=1e-3),
                  loss=SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=args.epochs,
                        validation_split=0.1)

    print("\nEvaluating on the test images:")
    results = model.evaluate(x_test, y_test, return_dict=True)
    print(f"test loss {results['loss']:.4f}, test accuracy {results['accuracy']:.4f}")

    model_path = os.path.join(out, "digits_mlp.keras")
    model.save(model_path)
    reloaded = load_model(model_path)
    before = model.predict(x_test, verbose=0)
    after = reloaded.predict(x_test, verbose=0)
    difference = float(np.max(np.abs(before - after)))
    if difference > 1e-6:
        raise RuntimeError(f"the reloaded model predicts differently (max difference {difference})")
    print(f"\nSaved {model_path} and loaded it back: predictions match "
          f"(max difference {difference:g}).")

    plot_path = os.path.join(out, "history.png")
    if plot_history(history, plot_path):
        print(f"Training curves: {plot_path}")
    print("\n" + NEXT_STEPS)
    return {"model": model, "history": history.history, "test": results, "model_path": model_path,
            "plot_path": plot_path if os.path.exists(plot_path) else None}

