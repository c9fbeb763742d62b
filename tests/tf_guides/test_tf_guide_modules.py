"""TensorFlow's "intro to modules" and "custom layers" guides
(scripts/modules_and_layers.py), checked against NumPy."""

from __future__ import annotations

import numpy as np


def _data():
    rng = np.random.default_rng(1)
    w1 = rng.normal(size=(3, 3)).astype(np.float32)
    w2 = rng.normal(size=(3, 2)).astype(np.float32)
    return w1, w2, rng.normal(size=(4, 3)).astype(np.float32)


def test_module_outputs_variables_and_submodules(run_guide):
    printed, _ = run_guide("modules_and_layers")
    w1, w2, x = _data()
    expected = np.maximum(np.maximum(x @ w1, 0) @ w2, 0)
    np.testing.assert_allclose(printed["output"][0], expected.ravel(), rtol=1e-5, atol=1e-6)
    assert printed["counts"][0].tolist() == [4, 4, 2]
    assert printed["shapes"][0].tolist() == [3, 3, 3, 3, 2, 2]


def test_custom_layer_and_one_sgd_step(run_guide):
    printed, _ = run_guide("modules_and_layers")
    _, _, x = _data()
    kernel = np.ones((3, 2))
    np.testing.assert_allclose(printed["layer_output"][0], (x @ kernel).ravel(), rtol=1e-5)
    assert printed["layer_weights"][0].tolist() == [1, 3, 2]
    # d/dK mean((xK - 1)^2) = 2 x^T (xK - 1) / (4 * 2)
    residual = x @ kernel - 1
    np.testing.assert_allclose(printed["sgd_loss"][0], np.mean(residual ** 2), rtol=1e-5)
    new_kernel = kernel - 0.1 * 2 * x.T @ residual / residual.size
    np.testing.assert_allclose(printed["sgd_kernel"][0], new_kernel.ravel(), rtol=1e-5)


def test_same_numbers_as_tensorflow(run_guide):
    printed, _ = run_guide("modules_and_layers")
    reference, _ = run_guide("modules_and_layers", backend="tensorflow")
    for name in ("output", "counts", "layer_output", "sgd_loss", "sgd_kernel"):
        np.testing.assert_allclose(printed[name], reference[name], rtol=1e-5, atol=1e-6)
