"""TensorFlow's "basic training loops" guide (scripts/basic_training_loop.py),
checked against gradient descent written out in NumPy."""

from __future__ import annotations

import numpy as np


def _numpy_descent(steps, w=5.0, b=0.0, lr=0.1):
    """The guide's data and its MSE gradient descent, in float64 NumPy:
    d/dw mean((wx + b - y)^2) = mean(2 (wx + b - y) x), d/db = mean(2 (wx + b - y))."""
    rng = np.random.default_rng(0)
    x = np.linspace(-2, 2, 201).astype(np.float32).astype(np.float64)
    noise = rng.normal(size=201).astype(np.float32).astype(np.float64)
    y = x * 3.0 + 2.0 + noise
    history = []
    for _ in range(steps):
        residual = w * x + b - y
        loss_before = np.mean(residual ** 2)
        w, b = w - lr * np.mean(2 * residual * x), b - lr * np.mean(2 * residual)
        history.append((w, b, np.mean((w * x + b - y) ** 2), loss_before))
    return x, y, history


def test_eager_and_compiled_training_match_numpy_gradient_descent(run_guide):
    printed, _ = run_guide("basic_training_loop")
    x, y, history = _numpy_descent(15)
    assert printed["variables"][0].tolist() == [2, 2]
    np.testing.assert_allclose(printed["initial_loss"][0], np.mean((5 * x - y) ** 2), rtol=1e-5)
    for epoch, (w, b, loss, _) in enumerate(history[:10]):
        np.testing.assert_allclose(printed["epoch"][epoch], [epoch, w, b, loss], rtol=2e-5)
    # The compiled step returns the loss before its update, as the guide's step does.
    for step, (w, b, _, loss_before) in enumerate(history[10:]):
        np.testing.assert_allclose(printed["compiled"][step], [step, w, b, loss_before],
                                   rtol=2e-5)


def test_same_numbers_as_tensorflow(run_guide):
    printed, _ = run_guide("basic_training_loop")
    reference, _ = run_guide("basic_training_loop", backend="tensorflow")
    for name in ("initial_loss", "epoch", "compiled"):
        np.testing.assert_allclose(printed[name], reference[name], rtol=1e-5)
