"""The cost of the `loopax.ops` wrapper in eager mode, with no tape recording.

Each row times a loopax op and the same computation written with
`jax.numpy` / `jax.nn` directly, on small arrays (where fixed per-call cost
dominates), in one run. `overhead` is loopax minus reference per call.
Most loopax ops run their pure function as one jitted call (`compiled` in
loopax/src/ops/utils.py), so where `jax.numpy` / `jax.nn` do Python work per
call (argument parsing, custom_jvp tracing, einsum path search) or several
dispatches (crossentropies), loopax is faster than calling JAX directly.

    python bench/ops_overhead.py [--repeats 30] [--number 300]
"""

import argparse
import timeit

import jax
import jax.numpy as jnp
import numpy as np

import loopax
import loopax.src.tensor
from loopax import ops


def per_call_us(ours, reference, number, repeats):
    """Best per-call time of each, alternating rounds so both see the same load."""
    jax.block_until_ready((ours(), reference()))  # compile and warm up
    best_ours = best_ref = float("inf")
    for _ in range(repeats):
        best_ours = min(best_ours, timeit.timeit(ours, number=number))
        best_ref = min(best_ref, timeit.timeit(reference, number=number))
    return best_ours / number * 1e6, best_ref / number * 1e6


def reference_sparse_ce(labels, logits):
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jax.nn.one_hot(labels, logits.shape[-1]) * log_p, axis=-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--number", type=int, default=300)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(32, 32)), jnp.float32)
    y = jnp.asarray(rng.normal(size=(32, 32)), jnp.float32)
    v = loopax.Variable(x)
    labels = jnp.asarray(rng.integers(0, 32, size=(32,)), jnp.int32)
    image = jnp.asarray(rng.normal(size=(8, 8, 8, 4)), jnp.float32)
    kernel = jnp.asarray(rng.normal(size=(3, 3, 4, 8)), jnp.float32)
    dn = jax.lax.conv_dimension_numbers(image.shape, kernel.shape, ("NHWC", "HWIO", "NHWC"))

    identity = lambda a: a
    wrapped_identity = loopax.src.tensor.op(identity)
    rows = [
        ("op(identity): the wrapper alone", lambda: wrapped_identity(x), lambda: identity(x)),
        ("op(identity)(Variable)", lambda: wrapped_identity(v), lambda: identity(v.value)),
        ("add(x, y)", lambda: ops.add(x, y), lambda: jnp.add(x, y)),
        ("add(x, 1.0)", lambda: ops.add(x, 1.0), lambda: jnp.add(x, 1.0)),
        ("add(Variable, y)", lambda: ops.add(v, y), lambda: jnp.add(v.value, y)),
        ("variable + y", lambda: v + y, lambda: v.value + y),
        ("exp(x)", lambda: ops.exp(x), lambda: jnp.exp(x)),
        ("matmul(x, y)", lambda: ops.matmul(x, y), lambda: jnp.matmul(x, y)),
        ("mean(x, axis=0)", lambda: ops.mean(x, axis=0), lambda: jnp.mean(x, axis=0)),
        ("transpose(x)", lambda: ops.transpose(x), lambda: jnp.transpose(x)),
        ("concatenate([x, y])", lambda: ops.concatenate([x, y]), lambda: jnp.concatenate([x, y])),
        (
            "einsum('ij,jk->ik', x, y)",
            lambda: ops.einsum("ij,jk->ik", x, y),
            lambda: jnp.einsum("ij,jk->ik", x, y),
        ),
        (
            "reshape(x, (16, 64))",
            lambda: ops.reshape(x, (16, 64)),
            lambda: jnp.reshape(x, (16, 64)),
        ),
        ("relu(x)", lambda: ops.relu(x), lambda: jax.nn.relu(x)),
        ("softmax(x)", lambda: ops.softmax(x), lambda: jax.nn.softmax(x)),
        ("gelu(x)", lambda: ops.gelu(x), lambda: jax.nn.gelu(x)),
        (
            "conv(image, kernel, 'same')",
            lambda: ops.conv(image, kernel, padding="same"),
            lambda: jax.lax.conv_general_dilated(
                image, kernel, (1, 1), "SAME", dimension_numbers=dn
            ),
        ),
        (
            "sparse_categorical_crossentropy",
            lambda: ops.sparse_categorical_crossentropy(labels, x, from_logits=True),
            lambda: reference_sparse_ce(labels, x),
        ),
    ]
    print(f"eager, no tape; {jax.devices()[0].platform}; per call, best of {args.repeats}")
    print(f"{'op':34s} {'loopax µs':>10s} {'jax µs':>10s} {'overhead µs':>12s} {'ratio':>6s}")
    for name, ours, reference in rows:
        t_ours, t_ref = per_call_us(ours, reference, args.number, args.repeats)
        print(f"{name:34s} {t_ours:10.2f} {t_ref:10.2f} {t_ours - t_ref:12.2f} "
              f"{t_ours / t_ref:6.2f}")


if __name__ == "__main__":
    main()
