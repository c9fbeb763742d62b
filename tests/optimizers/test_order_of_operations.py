"""The optimizer's processing chain against a NumPy reference of Keras's order
of operations (keras/src/optimizers/base_optimizer.py, `apply` and
`_backend_apply_gradients`; the JAX backend keeps the order):

    unscale (loss_scale_factor) -> accumulate (mean of N) -> clip -> decay the
    weights -> update (SGD with momentum) -> EMA (every call; overwrite) -> count

for random gradients and random combinations of the settings.
"""

import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import loopax
from loopax import optimizers

SHAPES = [(2, 3), (3,)]


def clipped(grads, clip_kind, clip):
    if clip_kind == "clipnorm":
        return [g * clip / max(np.linalg.norm(g), clip) for g in grads]
    if clip_kind == "global_clipnorm":
        norm = np.sqrt(sum(np.sum(g ** 2) for g in grads))
        return [g * clip / max(norm, clip) for g in grads]
    if clip_kind == "clipvalue":
        return [np.clip(g, -clip, clip) for g in grads]
    return grads


def keras_order_reference(weights, grad_steps, s):
    """Weights after each call and the final call count, in float64, following
    Keras's order with SGD(momentum) as the update."""
    w = [x.astype(np.float64) for x in weights]
    momenta = [np.zeros_like(x) for x in w]
    accumulators = [np.zeros_like(x) for x in w]
    averages = [np.zeros_like(x) for x in w]
    lr, n = s["learning_rate"], s["gradient_accumulation_steps"]
    trace = []
    for calls, grads in enumerate(grad_steps):
        grads = [g.astype(np.float64) for g in grads]
        if s["loss_scale_factor"]:
            grads = [g / s["loss_scale_factor"] for g in grads]
        update_now = n is None or (calls + 1) % n == 0
        if n is not None and not update_now:
            accumulators = [a + g for a, g in zip(accumulators, grads)]
        else:
            if n is not None:
                grads = [(g + a) / n for g, a in zip(grads, accumulators)]
                accumulators = [np.zeros_like(a) for a in accumulators]
            grads = clipped(grads, s["clip_kind"], s["clip"])
            if s["weight_decay"]:
                w = [x - x * s["weight_decay"] * lr for x in w]
            momenta = [s["momentum"] * m - lr * g for m, g in zip(momenta, grads)]
            w = [x + m for x, m in zip(w, momenta)]
        if s["use_ema"]:
            updates_done = calls // n if n else calls     # Keras's `iterations`
            m = 0.0 if updates_done == 0 else s["ema_momentum"]
            averages = [m * a + (1 - m) * x for a, x in zip(averages, w)]
            frequency = s["ema_overwrite_frequency"]
            if frequency and (updates_done + 1) % frequency == 0:
                w = [a.copy() for a in averages]
        trace.append(w)
    return trace


optimizer_settings = st.fixed_dictionaries({
    "learning_rate": st.sampled_from([0.01, 0.3]),
    "momentum": st.sampled_from([0.0, 0.9]),
    "clip_kind": st.sampled_from([None, "clipnorm", "global_clipnorm", "clipvalue"]),
    "clip": st.sampled_from([0.1, 1.0]),
    "weight_decay": st.sampled_from([None, 0.05]),
    "gradient_accumulation_steps": st.sampled_from([None, 2, 3]),
    "use_ema": st.booleans(),
    "ema_momentum": st.sampled_from([0.5, 0.9]),
    "ema_overwrite_frequency": st.sampled_from([None, 1, 2]),
    "loss_scale_factor": st.sampled_from([None, 4.0]),
})


def make_optimizer(s):
    clipping = {s["clip_kind"]: s["clip"]} if s["clip_kind"] else {}
    return optimizers.SGD(
        s["learning_rate"], momentum=s["momentum"], weight_decay=s["weight_decay"],
        gradient_accumulation_steps=s["gradient_accumulation_steps"], use_ema=s["use_ema"],
        ema_momentum=s["ema_momentum"], ema_overwrite_frequency=s["ema_overwrite_frequency"],
        loss_scale_factor=s["loss_scale_factor"], **clipping)


@settings(max_examples=30, deadline=None)
@given(s=optimizer_settings, seed=st.integers(0, 2 ** 16), calls=st.integers(1, 6))
def test_chain_follows_keras_order_of_operations(s, seed, calls):
    rng = np.random.default_rng(seed)
    weights = [rng.normal(size=shape).astype("float32") for shape in SHAPES]
    grad_steps = [[(rng.normal(size=shape) * 2).astype("float32") for shape in SHAPES]
                  for _ in range(calls)]
    variables = [loopax.Variable(w.copy()) for w in weights]
    optimizer = make_optimizer(s)
    expected = keras_order_reference(weights, grad_steps, s)
    for call, grads in enumerate(grad_steps):
        optimizer.apply([jnp.asarray(g) for g in grads], variables)
        for v, want in zip(variables, expected[call]):
            np.testing.assert_allclose(v.numpy(), want, rtol=2e-5, atol=2e-6,
                                       err_msg=f"call {call + 1} of {calls}, settings {s}")
    n = s["gradient_accumulation_steps"] or 1
    assert int(optimizer.iterations) == calls // n
