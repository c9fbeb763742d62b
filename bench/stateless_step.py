"""A jitted training step built from loopax pieces vs. the same step in plain JAX + optax.

The loopax step is seed 000's: `model.stateless_call` + a loss object +
`optimizer.stateless_apply` under `jax.jit`. The reference computes the same
MLP (784-64-64-10, Adam 1e-3, batch 32) with hand-written `jnp` and optax.
Both are fed the same device-resident batches; the ratio is loopax / reference.

    python bench/stateless_step.py [--steps 2000]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import loopax as keras


def make_model():
    inputs = keras.Input(shape=(784,))
    x = keras.layers.Dense(64, activation="relu")(inputs)
    x = keras.layers.Dense(64, activation="relu")(x)
    outputs = keras.layers.Dense(10)(x)
    return keras.Model(inputs, outputs)


def loopax_step_fn(model, optimizer, loss_fn):
    def compute_loss(tv, ntv, x, y):
        y_pred, ntv = model.stateless_call(tv, ntv, x)
        return loss_fn(y, y_pred), ntv

    grad_fn = jax.value_and_grad(compute_loss, has_aux=True)

    @jax.jit
    def step(state, x, y):
        tv, ntv, ov = state
        (loss, ntv), grads = grad_fn(tv, ntv, x, y)
        tv, ov = optimizer.stateless_apply(ov, grads, tv)
        return loss, (tv, ntv, ov)

    return step


def reference_step_fn(tx):
    def forward(params, x):
        (w1, b1), (w2, b2), (w3, b3) = params
        h = jax.nn.relu(x @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        return h @ w3 + b3

    def loss_fn(params, x, y):
        logits = forward(params, x)
        return jnp.mean(optax.softmax_cross_entropy(logits, y))

    @jax.jit
    def step(state, x, y):
        params, opt_state = state
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return loss, (optax.apply_updates(params, updates), opt_state)

    return step


def time_loop(step, state, batches, steps):
    loss, state = step(state, *batches[0])  # compile
    jax.block_until_ready(loss)
    start = time.perf_counter()
    for i in range(steps):
        loss, state = step(state, *batches[i % len(batches)])
    jax.block_until_ready((loss, state))
    return (time.perf_counter() - start) / steps * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    batches = [(jnp.asarray(rng.random((32, 784), np.float32)),
                jnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]))
               for _ in range(64)]

    model = make_model()
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True)
    loopax_step = loopax_step_fn(model, optimizer, loss_fn)
    loopax_state = ([v.value for v in model.trainable_variables],
                    [v.value for v in model.non_trainable_variables],
                    [v.value for v in optimizer.variables])

    params = [tuple(np.asarray(v) for v in model.trainable_variables[i:i + 2]) for i in (0, 2, 4)]
    tx = optax.adam(1e-3, eps=1e-7)
    ref_state = (params, tx.init(params))
    ref_step = reference_step_fn(tx)

    ours, ref = [], []
    for _ in range(args.repeats):  # interleave so drift hits both alike
        ref.append(time_loop(ref_step, ref_state, batches, args.steps))
        ours.append(time_loop(loopax_step, loopax_state, batches, args.steps))
    o, r = min(ours), min(ref)
    print(f"plain JAX + optax step : {r:8.1f} us/step")
    print(f"loopax stateless step  : {o:8.1f} us/step")
    print(f"ratio loopax/reference : {o / r:8.3f}")


if __name__ == "__main__":
    main()
