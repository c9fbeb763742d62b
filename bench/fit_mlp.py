"""fit() speed on seed 000's MLP against a fused floor, a hand-written jax.jit
loop and (when installed) Keras 3, all in one run.

Model: 784-64(relu)-64(relu)-10, categorical cross-entropy on logits, Adam
1e-3, batch 32. Data: synthetic MNIST-shaped, 60,000 x 784 uniform [0, 1)
float32 pixels and uniformly random one-hot labels (the numbers of the step,
not the accuracy, are measured; the pixel values do not change the cost).

1. floor: a whole epoch in one `lax.scan` over the device-resident data
   (pre-batched, no shuffle): plain JAX + optax, the least work possible;
2. jax.jit loop: one jitted plain JAX + optax step per batch, batches sliced
   from host NumPy arrays (the usual hand-written loop);
3. loopax fit(): `model.fit(x, y, batch_size=32, epochs=E, verbose=0)`,
   defaults otherwise (steps_per_execution="auto", shuffle=True);
4. Keras 3 fit() with KERAS_BACKEND=jax, if `keras` is importable;
5. loopax fit() with a batch-level user callback (`on_train_batch_end`
   counting batches and reading the loss: it needs every batch, so fit runs
   one compiled step per call), under "auto" and under
   `steps_per_execution=1`: the first must be no slower than the second.

Per-step times exclude compilation: epochs after the first, timed from
`on_epoch_begin` to `on_epoch_end` (which waits for the epoch's logs).

    python bench/fit_mlp.py [--epochs 3] [--samples 60000]
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

BATCH = 32
SIZES = ((784, 64), (64, 64), (64, 10))


def make_data(n):
    rng = np.random.default_rng(0)
    x = rng.random((n, 784), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)]
    return x, y


# ---- plain JAX + optax -------------------------------------------------------

def init_params(key):
    params = []
    for k, (fan_in, fan_out) in zip(jax.random.split(key, 3), SIZES):
        limit = np.sqrt(6 / (fan_in + fan_out))
        params.append((jax.random.uniform(k, (fan_in, fan_out), jnp.float32, -limit, limit),
                       jnp.zeros(fan_out, jnp.float32)))
    return params


def forward(params, x):
    (w1, b1), (w2, b2), (w3, b3) = params
    h = jax.nn.relu(x @ w1 + b1)
    h = jax.nn.relu(h @ w2 + b2)
    return h @ w3 + b3


def loss_fn(params, x, y):
    return jnp.mean(optax.softmax_cross_entropy(forward(params, x), y))


TX = optax.adam(1e-3, eps=1e-7)


def plain_step(state, batch):
    params, opt_state = state
    loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
    updates, opt_state = TX.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), loss


def floor_us(x, y, epochs):
    steps = len(x) // BATCH
    xb = jax.device_put(x[:steps * BATCH].reshape(steps, BATCH, 784))
    yb = jax.device_put(y[:steps * BATCH].reshape(steps, BATCH, 10))

    @jax.jit
    def epoch(state, xb, yb):
        return lax.scan(plain_step, state, (xb, yb))

    params = init_params(jax.random.key(0))
    state = (params, TX.init(params))
    state, losses = epoch(state, xb, yb)          # compile + one epoch
    jax.block_until_ready(losses)
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        state, losses = epoch(state, xb, yb)
        jax.block_until_ready(losses)
        times.append(time.perf_counter() - start)
    return min(times) / steps * 1e6


def jit_loop_us(x, y, epochs):
    steps = len(x) // BATCH
    step = jax.jit(plain_step, donate_argnums=0)
    params = init_params(jax.random.key(0))
    state = (params, TX.init(params))
    state, loss = step(state, (x[:BATCH], y[:BATCH]))
    jax.block_until_ready(loss)
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        for i in range(steps):
            state, loss = step(state, (x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]))
        jax.block_until_ready(state)
        times.append(time.perf_counter() - start)
    return min(times) / steps * 1e6


# ---- frameworks' fit() ---------------------------------------------------------

class BatchCounter:
    """A user callback with a batch hook: it counts batches and reads the loss."""

    def __init__(self, keras):
        class Counter(keras.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self.batches, self.loss = 0, None

            def on_train_batch_end(self, batch, logs=None):
                self.batches += 1
                self.loss = logs["loss"]

        self.callback = Counter()


def fit_us(keras, x, y, epochs, batch_callback=False, steps_per_execution="auto"):
    """µs/step of `model.fit` (epochs after the first) and the whole call's seconds."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(784,), name="digits")
    h = keras.layers.Dense(64, activation="relu")(inputs)
    h = keras.layers.Dense(64, activation="relu")(h)
    outputs = keras.layers.Dense(10, name="predictions")(h)
    model = keras.models.Model(inputs=inputs, outputs=outputs)
    fusion = {} if steps_per_execution == "auto" else {"steps_per_execution": steps_per_execution}
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                  loss=keras.losses.CategoricalCrossentropy(from_logits=True), **fusion)

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.times = []

        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.times.append(time.perf_counter() - self.start)

    timer = EpochTimer()
    start = time.perf_counter()
    extra = [BatchCounter(keras).callback] if batch_callback else []
    model.fit(x, y, batch_size=BATCH, epochs=epochs + 1, verbose=0, callbacks=[timer] + extra)
    total = time.perf_counter() - start
    steps = -(-len(x) // BATCH)
    if batch_callback:
        assert extra[0].batches == steps * (epochs + 1), (extra[0].batches, steps)
        return min(timer.times[1:]) / steps * 1e6, total
    planner = _train_planner(model)
    if planner is not None:
        print(f"  (loopax chose: {planner.mode} steps, {planner.k if planner.mode == 'loop' else 1}"
              f" per call)")
    return min(timer.times[1:]) / steps * 1e6, total


def keras_us(epochs, samples):
    """Keras 3 runs in a subprocess (its own JAX settings); None if not installed."""
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import fit_mlp, keras; x, y = fit_mlp.make_data({samples}); "
            f"print(fit_mlp.fit_us(keras, x, y, {epochs})[0])")
    env = dict(os.environ, KERAS_BACKEND="jax")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        if "No module named 'keras'" not in out.stderr:
            print(out.stderr[-2000:], file=sys.stderr)
        return None
    return float(out.stdout.strip().splitlines()[-1])


def _train_planner(model):
    """The planner of fit()'s device-data training passes (None before one ran)."""
    from loopax.src.trainers.pass_kind import TRAIN
    engine = getattr(model, "_compiled_steps", None)   # None: a Keras model
    if engine is None:
        return None
    return next((planner for (kind, on_device, _), planner in engine.planners.items()
                 if kind is TRAIN and on_device), None)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per contender")
    parser.add_argument("--rounds", type=int, default=2,
                        help="interleaved rounds (the best of each contender counts)")
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--no-keras", action="store_true")
    args = parser.parse_args()
    # The loopax of this checkout (the script's directory comes first on sys.path,
    # so an installed loopax would be measured otherwise).
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import loopax
    print(f"loopax from {os.path.dirname(loopax.__file__)}")

    x, y = make_data(args.samples)
    print(f"seed-000 MLP 784-64-64-10, Adam 1e-3, batch {BATCH}, {args.samples} samples, "
          f"{jax.devices()[0].platform}, best of {args.rounds} rounds x {args.epochs} epochs")
    floor, loop, ours, theirs, total = [], [], [], [], None
    hooked_auto, hooked_single = [], []
    for _ in range(args.rounds):   # interleaved, so load from elsewhere hits all alike
        floor.append(floor_us(x, y, args.epochs))
        loop.append(jit_loop_us(x, y, args.epochs))
        us, seconds = fit_us(loopax, x, y, args.epochs)
        ours.append(us)
        hooked_auto.append(fit_us(loopax, x, y, args.epochs, batch_callback=True)[0])
        hooked_single.append(fit_us(loopax, x, y, args.epochs, batch_callback=True,
                                    steps_per_execution=1)[0])
        total = seconds if total is None else min(total, seconds)
        if not args.no_keras:
            theirs.append(keras_us(args.epochs, args.samples))
    floor, loop, ours = min(floor), min(loop), min(ours)
    hooked_auto, hooked_single = min(hooked_auto), min(hooked_single)
    theirs = None if not theirs or None in theirs else min(theirs)

    print(f"  fused floor (one lax.scan per epoch) : {floor:8.1f} us/step")
    print(f"  hand-written jax.jit loop (host data): {loop:8.1f} us/step")
    print(f"  loopax fit()                         : {ours:8.1f} us/step"
          f"   (whole fit call {total:.1f} s incl. compile)")
    if theirs is not None:
        print(f"  Keras 3 fit() (KERAS_BACKEND=jax)    : {theirs:8.1f} us/step")
    else:
        print("  Keras 3 fit()                        :   not installed")
    print(f"  loopax fit(), batch-level callback, steps_per_execution='auto': {hooked_auto:8.1f}"
          " us/step")
    print(f"  loopax fit(), batch-level callback, steps_per_execution=1     : {hooked_single:8.1f}"
          " us/step")
    print(f"loopax / floor  : {ours / floor:6.3f}   (target <= 1.25)")
    print(f"batch callback, auto / spe=1 : {hooked_auto / hooked_single:6.3f}   (target <= 1.0, "
          "within noise)")
    print(f"loopax / jit    : {ours / loop:6.3f}")
    if theirs is not None:
        print(f"loopax / Keras  : {ours / theirs:6.3f}   (target <= 0.70)")


if __name__ == "__main__":
    main()
