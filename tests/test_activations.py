"""Activations against NumPy formulas; names, serialization and errors."""

import math

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import jax
import numpy as np
import pytest
from hypothesis import given, settings

import loopax
from loopax import activations

x = np.linspace(-5, 5, 21).astype("float32")
sig = 1 / (1 + np.exp(-x))
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805

REFERENCES = {
    "relu": np.maximum(x, 0),
    "sigmoid": sig,
    "tanh": np.tanh(x),
    "linear": x,
    "elu": np.where(x > 0, x, np.exp(x) - 1),
    "selu": SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * (np.exp(x) - 1)),
    "gelu": 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2))),
    "silu": x * sig,
    "swish": x * sig,
    "softplus": np.log1p(np.exp(x)),
    "softsign": x / (1 + np.abs(x)),
    "leaky_relu": np.where(x > 0, x, 0.2 * x),
    "relu6": np.clip(x, 0, 6),
    "hard_sigmoid": np.clip(x / 6 + 0.5, 0, 1),
    "exponential": np.exp(x),
    "mish": x * np.tanh(np.log1p(np.exp(x))),
    "softmax": np.exp(x) / np.exp(x).sum(),
    "log_softmax": x - np.log(np.exp(x).sum()),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_activation_matches_numpy(name):
    got = activations.get(name)(x)
    np.testing.assert_allclose(got, REFERENCES[name], rtol=1e-5, atol=1e-6)


def test_relu_options():
    np.testing.assert_allclose(activations.relu(x, negative_slope=0.1, max_value=3.0,
                                                threshold=1.0),
                               np.minimum(np.where(x >= 1, x, 0.1 * (x - 1)), 3.0), rtol=1e-6)
    np.testing.assert_allclose(activations.gelu(x, approximate=True),
                               0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
                               rtol=1e-5, atol=1e-6)


def test_softmax_axis_and_gradient():
    m = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(np.asarray(activations.softmax(m, axis=0)).sum(0), 1, rtol=1e-6)
    g = jax.grad(lambda t: activations.sigmoid(t).sum())(x)
    np.testing.assert_allclose(g, sig * (1 - sig), rtol=1e-5, atol=1e-7)


def test_activations_accept_variables():
    v = loopax.Variable(x)
    np.testing.assert_allclose(activations.relu(v), np.maximum(x, 0))


def test_get_serialize_round_trip():
    for name in REFERENCES:
        fn = activations.get(name)
        assert activations.get(activations.serialize(fn)) is fn
    assert activations.get(None) is activations.linear
    custom = lambda t: t * 2
    assert activations.get(custom) is custom
    assert activations.serialize(custom) is custom


def test_unknown_activation_lists_valid_names():
    with pytest.raises(ValueError) as err:
        activations.get("rleu")
    assert "'rleu'" in str(err.value) and "relu" in str(err.value) and "gelu" in str(err.value)


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.float32, (5,), elements=st.floats(-30, 30, width=32)),
       st.floats(-10, 10, width=32))
def test_softmax_sums_to_one_and_ignores_shifts(v, shift):
    p = np.asarray(activations.softmax(v))
    np.testing.assert_allclose(p.sum(), 1, rtol=1e-5)
    np.testing.assert_allclose(activations.softmax(v + np.float32(shift)), p, atol=1e-5)
