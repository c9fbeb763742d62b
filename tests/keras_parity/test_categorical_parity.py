"""CategoryEncoding and Discretization against Keras (both run without
TensorFlow in Keras 3): outputs for every output mode and input rank, configs,
and Discretization's adapted boundaries against Keras's own quantile
summaries (Keras's `adapt` itself needs TensorFlow)."""

import numpy as np
import pytest
from keras_reference import keras

import loopax

kd = pytest.importorskip("keras.src.layers.preprocessing.discretization")
INDEX_INPUTS = [np.array([1, 2, 3]), np.array([[1], [2]]), np.array([[1, 2], [3, 3]]),
                np.array([[[1, 2], [3, 3]], [[0, 0], [2, 1]]])]


@pytest.mark.parametrize("mode", ["one_hot", "multi_hot", "count"])
@pytest.mark.parametrize("x", INDEX_INPUTS, ids=lambda x: f"shape{x.shape}")
def test_category_encoding_matches_keras(mode, x):
    expected = np.asarray(keras.layers.CategoryEncoding(num_tokens=4, output_mode=mode)(x))
    layer = loopax.layers.CategoryEncoding(num_tokens=4, output_mode=mode)
    out = np.asarray(layer(x))
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_category_encoding_count_weights_and_config_match_keras():
    x, w = np.array([[1, 2], [3, 3]]), np.array([[0.5, 1.0], [2.0, 3.0]], "float32")
    keras_layer = keras.layers.CategoryEncoding(num_tokens=5, output_mode="count")
    layer = loopax.layers.CategoryEncoding(num_tokens=5, output_mode="count")
    np.testing.assert_array_equal(layer(x, count_weights=w), keras_layer(x, count_weights=w))
    strip = lambda c: {k: v for k, v in c.items() if k not in ("name", "dtype")}
    assert strip(layer.get_config()) == strip(keras_layer.get_config())


def test_category_encoding_rejects_out_of_range_indices():
    with pytest.raises(ValueError, match=r"num_tokens=4"):
        loopax.layers.CategoryEncoding(num_tokens=4)(np.array([[1, 4]]))


@pytest.mark.parametrize("mode", ["int", "one_hot", "multi_hot", "count"])
@pytest.mark.parametrize("x", [np.array([[-1.0, 0.5, 2.0, 2.0]]),
                               np.array([-1.0, 0.5, 2.0, 1.0]),
                               np.array([0.0, 1.0, np.inf, -np.inf]),
                               np.array([[0, 1], [3, -2]])], ids=["2d", "1d", "edges", "ints"])
def test_discretization_matches_keras(mode, x):
    kwargs = {"bin_boundaries": [0.0, 1.0, 2.5], "output_mode": mode}
    expected = np.asarray(keras.layers.Discretization(**kwargs)(x))
    out = np.asarray(loopax.layers.Discretization(**kwargs)(x))
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_discretization_config_matches_keras():
    keras_layer = keras.layers.Discretization(num_bins=4, epsilon=0.05)
    layer = loopax.layers.Discretization(num_bins=4, epsilon=0.05)
    strip = lambda c: {k: v for k, v in c.items() if k not in ("name",)}
    assert strip(layer.get_config()) == strip(keras_layer.get_config())


@pytest.mark.parametrize("n, num_bins, epsilon", [(20, 4, 0.01), (1000, 3, 0.01),
                                                  (5000, 7, 0.001), (333, 5, 0.05)])
def test_discretization_adapt_matches_keras_quantile_summaries(n, num_bins, epsilon):
    data = np.random.default_rng(n).standard_normal(n).astype("float32")
    batches = [data[: n // 3], data[n // 3:]]
    summary = np.array([[], []], "float32")
    for batch in batches:  # what Keras's adapt() does, batch by batch
        summary = kd.merge_summaries(kd.summarize(batch, epsilon), summary, epsilon)
    expected = kd.get_bin_boundaries(summary, num_bins)
    layer = loopax.layers.Discretization(num_bins=num_bins, epsilon=epsilon)
    layer.adapt(batches)
    np.testing.assert_allclose(layer.bin_boundaries, expected, rtol=1e-6)
    # Reloaded from its config, the adapted layer buckets the same way.
    rebuilt = loopax.layers.Discretization.from_config(layer.get_config())
    np.testing.assert_array_equal(rebuilt(data), layer(data))
