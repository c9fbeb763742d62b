"""Runs one keras.io-style example script twice: with `keras` bound to loopax
and to Keras 3.15.1 (KERAS_BACKEND=jax), from the same initial weights.

A script is a function `script(keras, same_weights)` that builds its models,
passes each to `same_weights(model)` once it is built, trains and returns its
results (histories, predictions, sampled text: nested dicts/lists of numbers
or strings). Initial weights are drawn with NumPy in loopax's run and given to
Keras's by `set_weights`, so both train from the same point and the results
can be compared to float32 rounding.

Randomness the two libraries draw differently (an int seed becomes different
JAX keys in each) stays out of the scripts' training: noise is drawn on the
host with NumPy, as data, and dropout rates are 0.
"""

import inspect
from unittest import mock

import numpy as np
import pytest

import loopax

keras = pytest.importorskip(
    "keras", reason="keras is not installed: the Keras examples suite is skipped "
                    "(pip install 'loopax[test]' to run it)")
if keras.backend.backend() != "jax":
    pytest.skip(f"the Keras examples suite needs KERAS_BACKEND=jax; Keras was already imported "
                f"with the {keras.backend.backend()!r} backend.", allow_module_level=True)


class SameWeights:
    """Gives each model the same initial weights in both runs (models matched
    by the order the script passes them): in loopax's run, the weights a
    random initializer would have filled are drawn with NumPy (Glorot-uniform
    scale) and recorded; Keras's run receives the recorded weights."""

    def __init__(self):
        self.randomly_initialized = set()  # ids of weights built as zeros, to draw
        self.rng = np.random.default_rng(0)
        self.recorded = []
        self.replayed = 0
        self.replaying = False

    def __call__(self, model):
        if not self.replaying:
            weights = [np.asarray(w) for w in model.weights]
            weights = [glorot_uniform(value.shape, self.rng)
                       if id(w) in self.randomly_initialized
                       and np.issubdtype(value.dtype, np.floating) else value
                       for w, value in zip(model.weights, weights)]
            model.set_weights(weights)
            self.recorded.append(weights)
            return model
        weights = self.recorded[self.replayed]
        shapes = [tuple(w.shape) for w in model.weights]
        assert shapes == [w.shape for w in weights], (
            f"model {self.replayed} ({model.name}): Keras builds weights of shapes {shapes}, "
            f"loopax built {[w.shape for w in weights]}")
        model.set_weights(weights)
        self.replayed += 1
        return model


def glorot_uniform(shape, rng):
    """A float32 array drawn as Keras's default glorot_uniform draws (fans from
    the shape), from NumPy's generator."""
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    fan_in = shape[-2] * receptive if len(shape) > 1 else (shape[0] if shape else 1)
    fan_out = shape[-1] * receptive if shape else 1
    limit = np.sqrt(6 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, shape).astype("float32")


def random_initializers_as_zeros(library, same_weights):
    """Weights of `library` with a random initializer are built as zeros (and
    their ids noted in `same_weights`, which fills them): each random
    initializer compiles a kernel per new shape, seconds a script for values
    that are replaced anyway. Constant initializers (zeros, ones) are kept."""
    add_weight = library.Layer.add_weight
    constant = (library.initializers.Zeros, library.initializers.Ones,
                library.initializers.Constant)

    def add_weight_without_random_draw(self, *args, **kwargs):
        weight = inspect.signature(add_weight).bind(self, *args, **kwargs)
        # loopax's add_weight takes (shape, initializer, dtype) as `*args`: name them
        positional = weight.arguments.pop("args", ())
        weight.arguments.update(zip(("shape", "initializer", "dtype"), positional))
        initializer = weight.arguments.get("initializer")
        if isinstance(initializer, str):
            initializer = library.initializers.get(initializer)
        if isinstance(initializer, constant):
            return add_weight(*weight.args, **weight.kwargs)
        weight.arguments["initializer"] = "zeros"
        variable = add_weight(*weight.args, **weight.kwargs)
        same_weights.randomly_initialized.add(id(variable))
        return variable

    return mock.patch.object(library.Layer, "add_weight", add_weight_without_random_draw)


def run_twins(script):
    """`(loopax_results, keras_results)` of `script` run with each library."""
    same_weights = SameWeights()
    loopax.utils.set_random_seed(0)
    with random_initializers_as_zeros(loopax, same_weights):
        ours = script(loopax, same_weights)
    same_weights.replaying = True
    with random_initializers_as_zeros(keras, same_weights):
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
