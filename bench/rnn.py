"""An LSTM fit() step: loopax fit() vs the same lax.scan LSTM in plain JAX
(+ optax, one jitted step per batch, epoch in one lax.scan over batches) vs
Keras 3 fit() on JAX, in one run; ratios printed.

Model: (batch 64, 20 timesteps, 16 features) -> LSTM(64) -> Dense(1), mse,
Adam 1e-3. Times exclude compilation (the second epoch is timed).

    python bench/rnn.py [--samples 4096]
"""

import argparse
import os
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

BATCH, STEPS, FEATURES, UNITS = 64, 20, 16, 64


def data(n):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, STEPS, FEATURES)).astype("float32")
    return x, x.sum(axis=(1, 2))[:, None].astype("float32") / 10


def plain_jax(x, y):
    """Hand-written: input projection for all steps, then lax.scan over h @ R."""
    rng = np.random.default_rng(1)
    params = {"k": jnp.asarray(rng.normal(size=(FEATURES, 4 * UNITS)) * 0.1, jnp.float32),
              "r": jnp.asarray(rng.normal(size=(UNITS, 4 * UNITS)) * 0.1, jnp.float32),
              "b": jnp.zeros((4 * UNITS,)), "w": jnp.zeros((UNITS, 1)), "c": jnp.zeros((1,))}
    opt = optax.adam(1e-3)

    def forward(p, xb):
        xs = jnp.swapaxes(xb, 0, 1) @ p["k"] + p["b"]

        def step(carry, z_x):
            h, c = carry
            z = z_x + h @ p["r"]
            i, f, g, o = jnp.split(z, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), None
        zeros = jnp.zeros((xb.shape[0], UNITS))
        (h, _), _ = lax.scan(step, (zeros, zeros), xs)
        return h @ p["w"] + p["c"]

    def train_step(state, batch):
        p, s = state
        loss, g = jax.value_and_grad(lambda p: jnp.mean((forward(p, batch[0]) - batch[1]) ** 2))(p)
        updates, s = opt.update(g, s, p)
        return (optax.apply_updates(p, updates), s), loss

    nb = len(x) // BATCH
    xb = jnp.asarray(x[:nb * BATCH]).reshape(nb, BATCH, STEPS, FEATURES)
    yb = jnp.asarray(y[:nb * BATCH]).reshape(nb, BATCH, 1)
    epoch = jax.jit(lambda state: lax.scan(train_step, state, (xb, yb)))
    state = (params, opt.init(params))
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        state, losses = epoch(state)
        losses.block_until_ready()
        times.append(time.perf_counter() - t0)
    return min(times[1:]) / nb


def fit_time(lib, x, y):
    model = lib.Sequential([lib.Input((STEPS, FEATURES)), lib.layers.LSTM(UNITS),
                            lib.layers.Dense(1)])
    model.compile(optimizer=lib.optimizers.Adam(1e-3), loss="mse")
    times = []

    class Timer(lib.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.perf_counter() - self.t0)
    model.fit(x, y, batch_size=BATCH, epochs=3, verbose=0, shuffle=False, callbacks=[Timer()])
    return min(times[1:]) / (len(x) // BATCH)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--keras-only", action="store_true")
    args = parser.parse_args()
    x, y = data(args.samples)
    if args.keras_only:
        os.environ["KERAS_BACKEND"] = "jax"
        import keras
        print(fit_time(keras, x, y))
        return
    import loopax
    t_jax = plain_jax(x, y)
    t_loopax = fit_time(loopax, x, y)
    print(f"plain JAX lax.scan LSTM step: {t_jax * 1e3:.3f} ms")
    print(f"loopax fit() step:            {t_loopax * 1e3:.3f} ms  "
          f"({t_loopax / t_jax:.2f}x plain JAX)")
    try:
        out = subprocess.run([sys.executable, __file__, "--keras-only", "--samples",
                              str(args.samples)], capture_output=True, text=True, check=True)
        t_keras = float(out.stdout.strip().splitlines()[-1])
        print(f"Keras 3 (JAX) fit() step:     {t_keras * 1e3:.3f} ms  "
              f"(loopax is {t_keras / t_loopax:.2f}x faster)")
    except (subprocess.CalledProcessError, ValueError) as e:
        print(f"Keras 3 fit(): not measured ({type(e).__name__})")


if __name__ == "__main__":
    main()
