"""The optimizer's processing chain against a NumPy reference of Keras's order
of operations (keras/src/optimizers/base_optimizer.py, `apply` and
`_backend_apply_gradients`; the JAX backend keeps the order):

    unscale (loss_scale_factor) -> accumulate (mean of N) -> clip -> decay the
    weights -> update (SGD with momentum) -> EMA (every call; overwrite) -> count

for random gradients, six calls, and a covering set of the settings' combinations:
every pair of two settings' values, and every combination of the three settings
that count calls (accumulation, EMA, EMA overwrite), meet in at least one case.
Each case compiles its own step, so the 19 cases replace 30 random draws that
covered fewer pairs for more compilations.
"""

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

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


SETTINGS = {
    "learning_rate": [0.01, 0.3],
    "momentum": [0.0, 0.9],
    "clip_kind": [None, "clipnorm", "global_clipnorm", "clipvalue"],
    "clip": [0.1, 1.0],
    "weight_decay": [None, 0.05],
    "gradient_accumulation_steps": [None, 2, 3],
    "use_ema": [False, True],
    "ema_momentum": [0.5, 0.9],
    "ema_overwrite_frequency": [None, 1, 2],
    "loss_scale_factor": [None, 4.0],
}
COUNTING = ("gradient_accumulation_steps", "use_ema", "ema_overwrite_frequency")
CALLS = 6  # checked after every call: covers 1 to 6 calls, two and three full accumulations


def combinations_in(case):
    """The value pairs (and the counting triple) that one case exercises."""
    pairs = {((a, case[a]), (b, case[b])) for a, b in itertools.combinations(SETTINGS, 2)}
    return pairs | {tuple((k, case[k]) for k in COUNTING)}


def covering_cases(seed=0, candidates=40):
    """Settings dicts that together exercise every combination `combinations_in`
    names (a greedy covering array: each new case is the best of a few random ones,
    each built around a combination still missing)."""
    rng = np.random.default_rng(seed)
    missing = set()
    for a, b in itertools.combinations(SETTINGS, 2):
        missing |= {((a, x), (b, y)) for x in SETTINGS[a] for y in SETTINGS[b]}
    missing |= {tuple(zip(COUNTING, values))
                for values in itertools.product(*(SETTINGS[k] for k in COUNTING))}
    cases = []
    while missing:
        best_gain, best = -1, None
        ordered = sorted(missing, key=repr)
        for _ in range(candidates):
            case = {k: v[rng.integers(len(v))] for k, v in SETTINGS.items()}
            case.update(ordered[rng.integers(len(ordered))])
            gain = len(combinations_in(case) & missing)
            if gain > best_gain:
                best_gain, best = gain, case
        cases.append(best)
        missing -= combinations_in(best)
    return cases


def case_id(case):
    """Readable id: the settings that differ from a plain SGD."""
    parts = [f"lr{case['learning_rate']}", f"momentum{case['momentum']}"]
    if case["clip_kind"]:
        parts.append(f"{case['clip_kind']}{case['clip']}")
    if case["weight_decay"]:
        parts.append("decay")
    if case["gradient_accumulation_steps"]:
        parts.append(f"accumulate{case['gradient_accumulation_steps']}")
    if case["use_ema"]:
        parts.append(f"ema{case['ema_momentum']}")
        if case["ema_overwrite_frequency"]:
            parts.append(f"overwrite{case['ema_overwrite_frequency']}")
    if case["loss_scale_factor"]:
        parts.append("loss_scale")
    return "-".join(parts)


CASES = covering_cases()


def make_optimizer(s):
    clipping = {s["clip_kind"]: s["clip"]} if s["clip_kind"] else {}
    return optimizers.SGD(
        s["learning_rate"], momentum=s["momentum"], weight_decay=s["weight_decay"],
        gradient_accumulation_steps=s["gradient_accumulation_steps"], use_ema=s["use_ema"],
        ema_momentum=s["ema_momentum"], ema_overwrite_frequency=s["ema_overwrite_frequency"],
        loss_scale_factor=s["loss_scale_factor"], **clipping)


@pytest.mark.parametrize("s", CASES, ids=[f"{i}-{case_id(c)}" for i, c in enumerate(CASES)])
def test_chain_follows_keras_order_of_operations(s):
    rng = np.random.default_rng(CASES.index(s))
    weights = [rng.normal(size=shape).astype("float32") for shape in SHAPES]
    grad_steps = [[(rng.normal(size=shape) * 2).astype("float32") for shape in SHAPES]
                  for _ in range(CALLS)]
    variables = [loopax.Variable(w.copy()) for w in weights]
    optimizer = make_optimizer(s)
    expected = keras_order_reference(weights, grad_steps, s)
    n = s["gradient_accumulation_steps"] or 1
    for call, grads in enumerate(grad_steps):
        optimizer.apply([jnp.asarray(g) for g in grads], variables)
        for v, want in zip(variables, expected[call]):
            np.testing.assert_allclose(v.numpy(), want, rtol=2e-5, atol=2e-6,
                                       err_msg=f"call {call + 1}, settings {s}")
        assert int(optimizer.iterations) == (call + 1) // n


def test_the_cases_cover_every_pair_of_settings():
    covered = set().union(*(combinations_in(case) for case in CASES))
    for a, b in itertools.combinations(SETTINGS, 2):
        for x, y in itertools.product(SETTINGS[a], SETTINGS[b]):
            assert ((a, x), (b, y)) in covered
    assert len(CASES) <= 20
