"""fit() speed on a compute-bound small convnet against a hand-written jax.jit
loop, in one run.

Model: 28x28x1 -> Conv2D(32, 3, relu) -> Conv2D(64, 3, relu) -> MaxPool 2
-> Flatten -> Dense(10); categorical cross-entropy on logits, Adam 1e-3,
batch 64. Data: synthetic, uniform [0, 1) pixels and random one-hot labels.

The hand-written loop is plain JAX + optax (`lax.conv_general_dilated`,
NHWC / HWIO as the layers use) with one jitted step per batch sliced from
host NumPy arrays. loopax is `model.fit(x, y, batch_size=64, verbose=0)`.
Epochs of the two alternate (the best of each counts); per-step times
exclude compilation.

    python bench/fit_cnn.py [--epochs 6] [--samples 1280]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

BATCH = 64
TX = optax.adam(1e-3, eps=1e-7)
DN = ("NHWC", "HWIO", "NHWC")


def make_data(n):
    rng = np.random.default_rng(0)
    x = rng.random((n, 28, 28, 1), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)]
    return x, y


def init_params(key):
    k1, k2, k3 = jax.random.split(key, 3)

    def glorot(k, shape, fan_in, fan_out):
        limit = np.sqrt(6 / (fan_in + fan_out))
        return jax.random.uniform(k, shape, jnp.float32, -limit, limit)

    return [(glorot(k1, (3, 3, 1, 32), 9, 9 * 32), jnp.zeros(32)),
            (glorot(k2, (3, 3, 32, 64), 9 * 32, 9 * 64), jnp.zeros(64)),
            (glorot(k3, (12 * 12 * 64, 10), 12 * 12 * 64, 10), jnp.zeros(10))]


def forward(params, x):
    (k1, b1), (k2, b2), (w3, b3) = params
    h = jax.nn.relu(lax.conv_general_dilated(x, k1, (1, 1), "VALID", dimension_numbers=DN) + b1)
    h = jax.nn.relu(lax.conv_general_dilated(h, k2, (1, 1), "VALID", dimension_numbers=DN) + b2)
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return h.reshape(h.shape[0], -1) @ w3 + b3


def plain_step(state, batch):
    params, opt_state = state
    x, y = batch
    loss, grads = jax.value_and_grad(
        lambda p: jnp.mean(optax.softmax_cross_entropy(forward(p, x), y)))(params)
    updates, opt_state = TX.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), loss


def make_jit_epoch(x, y):
    """A function running one epoch of the hand-written loop; returns seconds."""
    steps = len(x) // BATCH
    step = jax.jit(plain_step, donate_argnums=0)
    params = init_params(jax.random.key(0))
    box = [(params, TX.init(params))]
    box[0], loss = step(box[0], (x[:BATCH], y[:BATCH]))   # compile
    jax.block_until_ready(loss)

    def epoch():
        state = box[0]
        start = time.perf_counter()
        for i in range(steps):
            state, loss = step(state, (x[i * BATCH:(i + 1) * BATCH],
                                       y[i * BATCH:(i + 1) * BATCH]))
        jax.block_until_ready(state)
        box[0] = state
        return time.perf_counter() - start
    return epoch


def make_fit_epoch(x, y):
    """A function running `model.fit(x, y, epochs=1)`; returns the epoch's
    seconds (on_epoch_begin to on_epoch_end). The first call compiles."""
    import loopax as keras
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(28, 28, 1))
    h = keras.layers.Conv2D(32, 3, activation="relu")(inputs)
    h = keras.layers.Conv2D(64, 3, activation="relu")(h)
    h = keras.layers.MaxPooling2D(2)(h)
    h = keras.layers.Flatten()(h)
    outputs = keras.layers.Dense(10)(h)
    model = keras.models.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.CategoricalCrossentropy(from_logits=True))

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds = time.perf_counter() - self.start

    timer = EpochTimer()

    def epoch():
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[timer])
        return timer.seconds
    epoch()
    planner = _train_planner(model)
    if planner is not None:
        print(f"  (loopax chose: {planner.mode} steps, {planner.k} per execution)")
    return epoch


def _train_planner(model):
    """The planner of fit()'s device-data training passes (None before one ran)."""
    from loopax.src.trainers.pass_kind import TRAIN
    engine = getattr(model, "_compiled_steps", None)   # None: a Keras model
    return None if engine is None else engine.planners.get((TRAIN, True))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6,
                        help="timed epochs per contender, alternating (the best counts)")
    parser.add_argument("--samples", type=int, default=1280)
    args = parser.parse_args()
    samples = args.samples - args.samples % BATCH
    x, y = make_data(samples)
    print(f"convnet 28x28x1-C32-C64-pool-D10, Adam 1e-3, batch {BATCH}, {samples} samples, "
          f"{jax.devices()[0].platform}, best of {args.epochs} alternating epochs")
    jit_epoch, fit_epoch = make_jit_epoch(x, y), make_fit_epoch(x, y)
    loop, ours = [], []
    for _ in range(args.epochs):   # alternate epochs: load from elsewhere hits both alike
        loop.append(jit_epoch())
        ours.append(fit_epoch())
    steps = len(x) // BATCH
    loop, ours = min(loop) / steps * 1e6, min(ours) / steps * 1e6
    print(f"  hand-written jax.jit loop (host data): {loop:9.1f} us/step")
    print(f"  loopax fit()                         : {ours:9.1f} us/step")
    print(f"loopax / jit : {ours / loop:6.3f}   (target <= 1.05)")


if __name__ == "__main__":
    main()
