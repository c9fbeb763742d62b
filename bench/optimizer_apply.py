"""Eager `optimizer.apply_gradients` (a tape loop's per-step call) vs. a
hand-written jitted optax step, for the 6 variables of a 784-64-64-10 MLP.

Both take the same gradients every step; the reference is
`params, state = jit(update)(params, state, grads)` with optax.adam.
Prints microseconds per call and the ratio loopax / reference.

    python bench/optimizer_apply.py [--steps 3000] [--optimizer adam]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import loopax

SHAPES = [(784, 64), (64,), (64, 64), (64,), (64, 10), (10,)]


def time_per_call(fns, steps, rounds=7):
    """Min over interleaved rounds of the per-call time of each fn (us), which
    keeps a busy machine from favouring whichever ran first."""
    for fn in fns:
        fn(), fn()  # compile
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(steps):
                out = fn()
            jax.block_until_ready(out)
            best[i] = min(best[i], (time.perf_counter() - start) / steps * 1e6)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--optimizer", default="adam")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    values = [rng.normal(size=s).astype("float32") * 0.05 for s in SHAPES]
    grads = [jnp.asarray(rng.normal(size=s).astype("float32")) for s in SHAPES]

    variables = [loopax.Variable(v, name=f"w{i}") for i, v in enumerate(values)]
    optimizer = loopax.optimizers.get(args.optimizer)
    pairs = list(zip(grads, variables))

    def loopax_apply():
        optimizer.apply_gradients(pairs)
        return variables[0]._value

    opt_state_values = None

    def loopax_stateless():
        nonlocal opt_state_values
        if opt_state_values is None:
            opt_state_values = [v.value for v in optimizer.variables]
            loopax_stateless.tv = [v.value for v in variables]
        loopax_stateless.tv, opt_state_values = optimizer.stateless_apply(
            opt_state_values, grads, loopax_stateless.tv)
        return loopax_stateless.tv[0]

    tx = optax.adam(1e-3) if args.optimizer == "adam" else getattr(optax, args.optimizer)(1e-3)
    params = [jnp.asarray(v) for v in values]
    state = tx.init(params)

    @jax.jit
    def reference_update(params, state, grads):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    def reference():
        nonlocal params, state
        params, state = reference_update(params, state, grads)
        return params[0]

    ref, eager, stateless = time_per_call([reference, loopax_apply, loopax_stateless],
                                          args.steps // 7)
    print(f"jitted optax step (reference):   {ref:8.1f} us/step")
    print(f"loopax apply_gradients (eager):  {eager:8.1f} us/step  ratio {eager / ref:.2f}")
    print(f"loopax stateless_apply (eager):  {stateless:8.1f} us/step  ratio {stateless / ref:.2f}")


if __name__ == "__main__":
    main()
