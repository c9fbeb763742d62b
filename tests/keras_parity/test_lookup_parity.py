"""StringLookup, IntegerLookup, Hashing and TextVectorization against Keras.

Keras 3 runs these layers with TensorFlow only, which the test environment
lacks: their Keras outputs were recorded once by
`reference/make_lookup_reference.py` (keras 3.15.1 + tensorflow 2.21) for the
cases in `reference/lookup_cases.py`, and are compared here exactly (floats
to 1e-6).
"""

import json
import pathlib
import sys

import numpy as np
import pytest

import loopax

HERE = pathlib.Path(__file__).parent / "reference"
sys.path.insert(0, str(HERE))
from lookup_cases import CASES  # noqa: E402

REFERENCE = json.loads((HERE / "lookup_reference.json").read_text())


def plain(x):
    x = np.asarray(x)
    return x.tolist()


@pytest.mark.parametrize("case_id, name, kwargs, adapt, inputs", CASES, ids=[c[0] for c in CASES])
def test_matches_recorded_keras_output(case_id, name, kwargs, adapt, inputs):
    expected = REFERENCE["cases"][case_id]
    layer = getattr(loopax.layers, name)(**kwargs)
    if adapt is not None:
        layer.adapt(adapt)
    if "vocabulary" in expected:
        assert layer.get_vocabulary() == expected["vocabulary"]
    out = np.asarray(layer(np.asarray(inputs)))
    want = np.asarray(expected["output"])
    assert out.shape == want.shape, (out.shape, want.shape)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    else:
        assert out.tolist() == want.tolist()
    # The vocabulary travels in the config: a rebuilt layer gives the same output.
    rebuilt = type(layer).from_config(layer.get_config())
    np.testing.assert_array_equal(np.asarray(rebuilt(np.asarray(inputs))), out)
