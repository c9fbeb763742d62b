"""`Layer.add_weight`'s arguments as Keras 3.15.1 takes them: `shape`,
`initializer`, `dtype` positionally or by keyword, a float/other-dtype default
initializer, and a clear ValueError for the Keras 2 order
`add_weight("kernel", shape=...)` that tf.keras 2 tutorials use (TF 2.21's
tf.keras, Keras 3, refuses it the same way)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import loopax

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keras_parity"))
from keras_reference import keras


def _build(module, **weight_kwargs):
    """Runs `add_weight(*args, **kwargs)` in `build` of a layer of `module`;
    returns the weight, or the exception raised."""
    args = weight_kwargs.pop("args", ())

    class L(module.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(*args, **weight_kwargs)

        def call(self, x):
            return x

    layer = L()
    try:
        layer(np.ones((2, 4), "float32"))
    except (TypeError, ValueError) as e:
        return e
    return layer.w


def _same(kwargs):
    ours, theirs = _build(loopax, **dict(kwargs)), _build(keras, **dict(kwargs))
    return ours, theirs


@pytest.mark.parametrize("kwargs", [
    {"args": ("kernel",), "shape": [4, 3]},           # Keras 2 order: name first
    {"args": ((4, 3),), "shape": (4, 3)},             # shape twice
    {"args": ((4,), "zeros"), "initializer": "ones"},  # initializer twice
    {"args": ((4,), "zeros", "float32", False)},       # four positionals
], ids=["name-first", "shape-twice", "initializer-twice", "four-positionals"])
def test_refused_as_keras_refuses(kwargs):
    ours, theirs = _same(kwargs)
    assert isinstance(theirs, Exception), theirs
    assert type(ours) is type(theirs), (ours, theirs)
    if kwargs["args"] and isinstance(kwargs["args"][0], str):
        assert "name='kernel'" in str(ours)   # the message names the fix


@pytest.mark.parametrize("kwargs, expected_dtype", [
    ({"args": ((3,), "ones", "float16")}, "float16"),
    ({"shape": (2, 5), "dtype": "int32"}, "int32"),       # default initializer: zeros
    ({"shape": (3,), "initializer": None}, "float32"),    # None: the default
], ids=["positional-three", "int-default-zeros", "initializer-none"])
def test_accepted_as_keras_accepts(kwargs, expected_dtype):
    ours, theirs = _same(kwargs)
    assert not isinstance(ours, Exception), ours
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(np.asarray(ours).dtype) == expected_dtype == str(np.asarray(theirs).dtype)
    if expected_dtype != "float32":   # deterministic initializers: same values
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    else:                             # glorot_uniform: within its limit, not constant
        limit = np.sqrt(6 / (2 * ours.shape[0])) if len(ours.shape) == 1 else None
        values = np.asarray(ours)
        assert np.all(np.abs(values) <= limit + 1e-6) and np.ptp(values) > 0
