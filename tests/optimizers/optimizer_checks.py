"""Shared helpers of the optimizer tests: a tiny problem and a training loop."""

import numpy as np

import loopax

SHAPES = [(3, 2), (2,)]


def make_problem(seed=42, steps=4):
    """Initial values and `steps` steps of gradients for a (3, 2) kernel and a (2,) bias."""
    rng = np.random.default_rng(seed)
    init = [rng.normal(size=s).astype("float32") for s in SHAPES]
    grads = [[rng.normal(size=s).astype("float32") for s in SHAPES] for _ in range(steps)]
    return init, grads


def make_variables(init):
    return [loopax.Variable(v, name=name) for v, name in zip(init, ["kernel", "bias"])]


def train(optimizer, init, grads_seq, variables=None):
    """Applies `grads_seq` eagerly; returns the final values as NumPy arrays."""
    variables = variables or make_variables(init)
    for grads in grads_seq:
        optimizer.apply_gradients(zip(grads, variables))
    return [v.numpy() for v in variables]


def assert_all_close(actual, expected, rtol=2e-5, atol=1e-5):
    # atol: float32 rounding of 1 - beta^t etc. over a few steps of size ~0.1.
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol)
