"""HashedCrossing against Keras 3.15.1's outputs. Keras's layer needs
TensorFlow, which the test environment lacks: its outputs were recorded once by
tests/keras_parity/reference/make_hashed_crossing_reference.py (keras 3.15.1 +
tensorflow 2.21) for the cases in hashed_crossing_cases.py, and are compared
here exactly."""

import json
import pathlib
import sys

import numpy as np
import pytest

import loopax

REFERENCE_DIR = pathlib.Path(__file__).parents[3] / "keras_parity" / "reference"
sys.path.insert(0, str(REFERENCE_DIR))
from hashed_crossing_cases import CASES  # noqa: E402

REFERENCE = json.loads((REFERENCE_DIR / "hashed_crossing_reference.json").read_text())


def feature(values, dtype):
    return np.asarray(values, dtype={"str": np.str_, "bytes": np.bytes_}.get(dtype, dtype))


@pytest.mark.parametrize("case_id, kwargs, features", CASES, ids=[c[0] for c in CASES])
def test_matches_recorded_keras_output(case_id, kwargs, features):
    expected = REFERENCE["cases"][case_id]
    layer = loopax.layers.HashedCrossing(**kwargs)
    out = np.asarray(layer(tuple(feature(*f) for f in features)))
    want = np.asarray(expected["output"])
    assert out.shape == want.shape
    assert out.tolist() == want.tolist()
    kind = "i" if kwargs.get("output_mode", "int") == "int" else "f"
    assert out.dtype.kind == np.dtype(expected["dtype"]).kind == kind
    rebuilt = loopax.layers.HashedCrossing.from_config(layer.get_config())
    assert np.asarray(rebuilt([feature(*f) for f in features])).tolist() == out.tolist()


def test_config_has_keras_keys():
    config = loopax.layers.HashedCrossing(9, output_mode="one_hot", name="cross").get_config()
    # Keras 3.15.1's HashedCrossing.get_config returns exactly these keys.
    assert {"num_bins", "output_mode", "sparse", "name", "dtype"} <= set(config)
    assert (config["num_bins"], config["output_mode"], config["sparse"]) == (9, "one_hot", False)


BAD_CALLS = {
    "one_feature": ((np.array([1, 2]),), ValueError, "at least two"),
    "not_a_list": (np.array([1, 2]), ValueError, "list or tuple"),
    "other_shapes": ((np.array([1, 2]), np.array([1, 2, 3])), ValueError, "same shape"),
    "two_columns": ((np.ones((2, 2), "int64"), np.ones((2, 2), "int64")), ValueError,
                    r"\(batch, 1\)"),
    "float_feature": ((np.array([1.5, 2.0]), np.array([1, 2])), ValueError, "integers or strings"),
}


@pytest.mark.parametrize("inputs, error, message", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_bad_inputs_raise_naming_the_fix(inputs, error, message):
    # Keras 3.15.1 raises a ValueError for each of these too (its _check_* methods).
    with pytest.raises(error, match=message):
        loopax.layers.HashedCrossing(5)(inputs)


@pytest.mark.parametrize("kwargs, message", [({"num_bins": 0}, "num_bins"),
                                             ({"num_bins": 4, "output_mode": "multi_hot"},
                                              "output_mode"),
                                             ({"num_bins": 4, "sparse": True}, "sparse")],
                         ids=["zero_bins", "multi_hot", "sparse"])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        loopax.layers.HashedCrossing(**kwargs)


def test_inside_a_compiled_model_it_says_to_cross_in_the_data_pipeline():
    a, b = loopax.Input((), dtype="int32"), loopax.Input((), dtype="int32")
    with pytest.raises(TypeError, match="before fit"):
        loopax.layers.HashedCrossing(5)((a, b))
