"""Tape training step vs a hand-written jax.jit + optax step (seed-000 MLP).

MLP 784-64-64-10, Adam(1e-3), batch 32, logits + categorical cross-entropy,
host NumPy batches. Three steps, timed in the same run:

  (a) jax.jit + optax: the reference.
  (b) GradientTape step run eagerly: model call under the tape, loss object,
      tape.gradient, optimizer.apply_gradients.
  (c) the same step under loopax.function.

Targets: (b) <= 8x (a), (c) <= 1.15x (a).

    /work/venv/bin/python bench/tape.py [--steps 200] [--rounds 5]
"""

import argparse
import time

import jax
import numpy as np
import optax

import loopax
from loopax.src.function import function
from loopax.src.tape import GradientTape

BATCH, STEPS, WARMUP = 32, 200, 20


def make_model():
    model = loopax.models.Sequential([
        loopax.layers.Dense(64, activation="relu"),
        loopax.layers.Dense(64, activation="relu"),
        loopax.layers.Dense(10),
    ])
    model(np.zeros((BATCH, 784), np.float32))
    return model


def batches(n):
    rng = np.random.default_rng(0)
    x = rng.random((n * BATCH, 784), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, n * BATCH)]
    return [(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]) for i in range(n)]


def time_steps(step, data, steps, sync):
    for i in range(WARMUP):
        step(*data[i % len(data)])
    sync()
    t0 = time.perf_counter()
    for i in range(steps):
        step(*data[i % len(data)])
    sync()
    return (time.perf_counter() - t0) / steps * 1e6


def reference(model, data, steps):
    """(a) A hand-written jax.jit + optax step on the same weights."""
    params = [np.asarray(v.value) for v in model.trainable_variables]
    tx = optax.adam(1e-3)
    state = {"params": params, "opt": tx.init(params)}

    def forward(p, x):
        h = jax.nn.relu(x @ p[0] + p[1])
        h = jax.nn.relu(h @ p[2] + p[3])
        return h @ p[4] + p[5]

    @jax.jit
    def train_step(p, opt_state, x, y):
        def loss_fn(p):
            return optax.softmax_cross_entropy(forward(p, x), y).mean()
        loss, grads = jax.value_and_grad(loss_fn)(p)
        updates, opt_state = tx.update(grads, opt_state, p)
        return optax.apply_updates(p, updates), opt_state, loss

    def step(x, y):
        state["params"], state["opt"], state["loss"] = train_step(
            state["params"], state["opt"], x, y)
    return time_steps(step, data, steps,
                      lambda: jax.block_until_ready(state.get("params")))


def tape_step_fn():
    model = make_model()
    loss_fn = loopax.losses.CategoricalCrossentropy(from_logits=True)
    optimizer = loopax.optimizers.Adam(learning_rate=1e-3)

    def train_step(x, y):
        with GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return model, train_step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    data = batches(50)

    model, eager_step = tape_step_fn()
    _, compiled = tape_step_fn()
    compiled = function(compiled)

    def sync_model(m):
        return lambda: jax.block_until_ready([v.value for v in m.trainable_variables])

    results = {"jax.jit + optax": [], "tape, eager": [], "tape, loopax.function": []}
    for _ in range(args.rounds):   # interleaved rounds; the best of each
        results["jax.jit + optax"].append(reference(model, data, args.steps))
        results["tape, eager"].append(time_steps(eager_step, data, args.steps // 4,
                                                 sync_model(model)))
        results["tape, loopax.function"].append(time_steps(
            compiled, data, args.steps, lambda: jax.block_until_ready(compiled(*data[0]))))
    ref = min(results["jax.jit + optax"])
    print(f"seed-000 MLP, Adam, batch {BATCH}, {jax.devices()[0].platform}, "
          f"best of {args.rounds} rounds")
    for name, times in results.items():
        best = min(times)
        print(f"  {name:24s} {best:8.1f} us/step   {best / ref:5.2f}x")


if __name__ == "__main__":
    main()
