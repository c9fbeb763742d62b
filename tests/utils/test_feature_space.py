"""`loopax.utils.FeatureSpace`. Keras's FeatureSpace needs TensorFlow (its adapt and
lookups use tf.data), so expectations are NumPy's: normalization and rescaling in
closed form, categorical columns one-hot at the index of the lookup/hashing/
discretization layer (each compared with Keras in tests/keras_parity), in Keras's
sorted-name order. (Checked once against Keras 3.15.1 + TensorFlow 2.21 on the same
data: equal.)"""

import numpy as np
import pytest

import loopax
from loopax.utils import FeatureSpace

DATA = {"f": np.array([1.0, 2.0, 3.0, 4.0, 10.0], "float32"),
        "g": np.array([0.5, -1.0, 2.0, 3.0, 4.0], "float32"),
        "h": np.array([5.0, 1.0, 2.0, 8.0, 3.0], "float32"),
        "i": np.array([1, 2, 2, 5, 1]),
        "s": np.array(["a", "b", "a", "c", "a"]),
        "t": ["x", "y", "x", "x", "z"],
        "z": np.array([7.0, 8.0, 9.0, 1.0, 2.0], "float32")}


def one_hot(indices, depth):
    return np.eye(depth, dtype="float32")[np.asarray(indices).reshape(-1)]


def expected_columns():
    """{name: expected encoded block} from NumPy and the single layers."""
    f = DATA["f"]
    lookup_i = loopax.layers.IntegerLookup()
    lookup_i.adapt(DATA["i"])
    lookup_s = loopax.layers.StringLookup(max_tokens=3)
    lookup_s.adapt(DATA["s"])
    bins = loopax.layers.Discretization(num_bins=3)
    bins.adapt(DATA["g"][:, None])
    hashing = loopax.layers.Hashing(num_bins=4)
    return {
        "f": ((f - f.mean()) / f.std())[:, None],
        "g": one_hot(bins(DATA["g"][:, None]), 3),
        "h": (DATA["h"] * 2.0 + 1.0)[:, None],
        "i": one_hot(lookup_i(DATA["i"]), lookup_i.vocabulary_size()),
        "s": one_hot(lookup_s(DATA["s"]), 3),
        "t": one_hot(hashing(np.array(DATA["t"])[:, None]), 4),
        "z": DATA["z"][:, None],
    }


def feature_space(output_mode):
    fs = FeatureSpace({"z": "float", "f": FeatureSpace.float_normalized(),
                       "g": FeatureSpace.float_discretized(num_bins=3),
                       "h": FeatureSpace.float_rescaled(scale=2.0, offset=1.0),
                       "i": "integer_categorical",
                       "s": FeatureSpace.string_categorical(max_tokens=3),
                       "t": FeatureSpace.string_hashed(4)}, output_mode=output_mode)
    fs.adapt(DATA)
    return fs


def test_concat_is_the_encoded_columns_in_sorted_name_order():
    expected = expected_columns()
    merged = feature_space("concat")(DATA)
    assert merged.dtype == np.float32
    np.testing.assert_allclose(merged, np.concatenate([expected[k] for k in sorted(expected)],
                                                      axis=-1), rtol=1e-5, atol=1e-6)
    single = feature_space("concat")({k: v[1] for k, v in DATA.items()})
    np.testing.assert_allclose(single, merged[1], rtol=1e-5, atol=1e-6)


def test_dict_output_gives_each_encoded_column():
    expected = expected_columns()
    out = feature_space("dict")(DATA)
    assert sorted(out) == sorted(expected)
    for name, block in expected.items():
        np.testing.assert_allclose(out[name], block, rtol=1e-5, atol=1e-6, err_msg=name)


def test_encoded_features_train_a_model():
    features = feature_space("concat")(DATA)
    model = loopax.Sequential([loopax.Input((features.shape[1],)), loopax.layers.Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(features, DATA["h"], epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_integer_features_with_int_output_cannot_be_concatenated():
    fs = FeatureSpace({"i": FeatureSpace.integer_categorical(output_mode="int")})
    fs.adapt(DATA)
    with pytest.raises(ValueError, match="cannot concatenate feature 'i'.*output_mode='dict'"):
        fs(DATA)
    fs = FeatureSpace({"i": FeatureSpace.integer_categorical(output_mode="int")},
                      output_mode="dict")
    fs.adapt(DATA)
    lookup = loopax.layers.IntegerLookup()
    lookup.adapt(DATA["i"])
    np.testing.assert_array_equal(fs(DATA)["i"], np.asarray(lookup(DATA["i"][:, None])))


@pytest.mark.parametrize("call, message", [
    (lambda: FeatureSpace({}), "cannot be None or empty"),
    (lambda: FeatureSpace({"a": "floaty"}), "invalid feature type 'floaty'"),
    (lambda: FeatureSpace({"a": "float"}, output_mode="stack"), "'concat' or 'dict'"),
    (lambda: FeatureSpace({"a": "float_normalized"})({"a": [1.0]}), "adapt"),
    (lambda: FeatureSpace({"a": "float"})([1.0]), "only be called with a dict"),
    (lambda: FeatureSpace({"a": "float"})({"b": [1.0]}), "no column 'a'"),
], ids=["empty", "unknown-type", "bad-output-mode", "not-adapted", "not-a-dict",
        "missing-column"])
def test_bad_use_is_refused_with_the_fix(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_crosses_say_they_are_not_built_yet():
    with pytest.raises(NotImplementedError, match="HashedCrossing"):
        FeatureSpace({"a": "string_categorical", "b": "string_categorical"},
                     crosses=[("a", "b")])
