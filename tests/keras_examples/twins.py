"""Runs one keras.io-style example script twice: with `keras` bound to loopax
and to Keras 3.15.1 (KERAS_BACKEND=jax), from the same initial weights.

A script is a function `script(keras, same_weights)` that builds its models,
passes each to `same_weights(model)` once it is built, trains and returns its
results (histories, predictions, sampled text: nested dicts/lists of numbers
or strings). loopax's run goes first and records each model's weights; Keras's
run receives them by `set_weights`, so both train from the same point and the
results can be compared to float32 rounding.

Randomness the two libraries draw differently (an int seed becomes different
JAX keys in each) stays out of the scripts' training: noise is drawn on the
host with NumPy, as data, and dropout rates are 0.
"""

import inspect
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

from unittest import mock  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import loopax  # noqa: E402

keras = pytest.importorskip(
    "keras", reason="keras is not installed: the Keras examples suite is skipped "
                    "(pip install 'loopax[test]' to run it)")
if keras.backend.backend() != "jax":
    pytest.skip(f"the Keras examples suite needs KERAS_BACKEND=jax; Keras was already imported "
                f"with the {keras.backend.backend()!r} backend.", allow_module_level=True)


class SameWeights:
    """Hands the weights each model had in loopax's run to the same model in
    Keras's run (models matched by the order the script passes them)."""

    def __init__(self):
        self.recorded = []
        self.replayed = 0
        self.replaying = False

    def __call__(self, model):
        if not self.replaying:
            self.recorded.append(model.get_weights())
            return model
        weights = self.recorded[self.replayed]
        shapes = [tuple(w.shape) for w in model.weights]
        assert shapes == [w.shape for w in weights], (
            f"model {self.replayed} ({model.name}): Keras builds weights of shapes {shapes}, "
            f"loopax built {[w.shape for w in weights]}")
        model.set_weights(weights)
        self.replayed += 1
        return model


def zero_initialized_keras_weights():
    """Keras weights created as zeros: they are replaced by loopax's anyway,
    and Keras's random initializers compile a kernel per new shape (seconds)."""
    add_weight = keras.Layer.add_weight

    def zeros_weight(self, *args, **kwargs):
        weight = inspect.signature(add_weight).bind(self, *args, **kwargs)
        weight.arguments["initializer"] = "zeros"
        return add_weight(*weight.args, **weight.kwargs)

    return mock.patch.object(keras.Layer, "add_weight", zeros_weight)


def run_twins(script):
    """`(loopax_results, keras_results)` of `script` run with each library."""
    same_weights = SameWeights()
    loopax.utils.set_random_seed(0)
    ours = script(loopax, same_weights)
    same_weights.replaying = True
    with zero_initialized_keras_weights():
        theirs = script(keras, same_weights)
    assert same_weights.replayed == len(same_weights.recorded), "a model was not built twice"
    return ours, theirs


def assert_same_results(ours, theirs, rtol=1e-4, atol=1e-6, where="results"):
    """Nested results equal: same keys and lengths, numbers to `rtol`/`atol`,
    strings exactly."""
    if isinstance(ours, dict):
        assert sorted(ours) == sorted(theirs), f"{where}: keys {sorted(ours)} vs {sorted(theirs)}"
        for key in ours:
            assert_same_results(ours[key], theirs[key], rtol, atol, f"{where}[{key!r}]")
    elif isinstance(ours, (list, tuple)) and any(isinstance(o, (str, dict)) for o in ours):
        assert len(ours) == len(theirs), f"{where}: {len(ours)} items vs Keras {len(theirs)}"
        for i, (o, t) in enumerate(zip(ours, theirs)):
            assert_same_results(o, t, rtol, atol, f"{where}[{i}]")
    elif isinstance(ours, str):
        assert ours == theirs, f"{where}: {ours!r} vs Keras {theirs!r}"
    else:
        np.testing.assert_allclose(np.asarray(ours, "float64"), np.asarray(theirs, "float64"),
                                   rtol=rtol, atol=atol, err_msg=where)


def falls(history, key="loss", factor=1.0):
    """The metric's last epoch is below its first (times `factor`): the example trains."""
    values = history[key]
    return values[-1] < factor * values[0]
