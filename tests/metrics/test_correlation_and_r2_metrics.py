"""R2Score, PearsonCorrelation and ConcordanceCorrelation (and the functions
pearson_correlation, concordance_correlation) against Keras 3: random data,
sample weights, several batches, statelessly under jit, in a compiled fit."""

import warnings

import numpy as np
import pytest
from keras_metric_pairs import (
    assert_matches_keras,
    fit_log_and_predictions,
    keras,
    keras_result,
)

from loopax import metrics


def batches(seed, shape=(10, 3), weighted=False, n=2):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = rng.normal(size=shape).astype("float32")
        p = (0.7 * y + 0.5 * rng.normal(size=shape)).astype("float32")
        w = rng.uniform(0, 2, size=shape[0]).astype("float32") if weighted else None
        out.append(((y, p), w))
    return out


@pytest.mark.parametrize("aggregation", [None, "uniform_average", "variance_weighted_average"],
                         ids=str)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_r2_matches_keras(aggregation, weighted):
    result = assert_matches_keras("R2Score", {"class_aggregation": aggregation},
                                  batches(1, weighted=weighted))
    assert result.shape == ((3,) if aggregation is None else ())


def test_r2_adjusted_and_per_entry_weights():
    assert_matches_keras("R2Score", {"num_regressors": 4}, batches(2, weighted=True))
    rng = np.random.default_rng(3)
    y, p = rng.normal(size=(2, 8, 2)).astype("float32")
    assert_matches_keras("R2Score", {}, [((y, p), rng.uniform(size=(8, 2)).astype("float32"))])


def test_r2_adjusted_falls_back_with_a_warning_when_too_few_samples():
    y, p = np.array([[1.0], [2.0], [4.0]]), np.array([[1.5], [2.0], [3.0]])
    m, plain = metrics.R2Score(num_regressors=5), metrics.R2Score()
    m.update_state(y, p)
    plain.update_state(y, p)
    with pytest.warns(UserWarning, match="more regressors"):
        result = m.result()
    np.testing.assert_allclose(result, plain.result())
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore")
        np.testing.assert_allclose(result, keras_result("R2Score", {"num_regressors": 5},
                                                        [((y, p), None)]), rtol=1e-6)


def test_r2_constant_column_scores_zero_like_keras():
    y = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 3.0]], "float32")
    p = np.array([[0.5, 0.2], [1.2, 1.1], [0.9, 2.5]], "float32")
    assert_matches_keras("R2Score", {"class_aggregation": None}, [((y, p), None)])


@pytest.mark.parametrize("name", ["PearsonCorrelation", "ConcordanceCorrelation"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_correlations_match_keras(name, weighted):
    assert_matches_keras(name, {}, batches(4, shape=(6, 5), weighted=weighted))


@pytest.mark.parametrize("name", ["PearsonCorrelation", "ConcordanceCorrelation"])
def test_correlations_along_axis_0_and_1d_inputs(name):
    assert_matches_keras(name, {"axis": 0}, batches(5, shape=(7, 3)))
    assert_matches_keras(name, {}, batches(6, shape=(9,)))


@pytest.mark.parametrize("fn", ["pearson_correlation", "concordance_correlation"])
def test_functions_match_keras(fn):
    rng = np.random.default_rng(7)
    y, p = rng.normal(size=(2, 4, 6)).astype("float32")
    for axis in (-1, 0):
        np.testing.assert_allclose(getattr(metrics, fn)(y, p, axis=axis),
                                   getattr(keras.metrics, fn)(y, p, axis=axis), rtol=1e-5,
                                   atol=1e-6)


def test_concordance_of_identical_and_shifted_predictions():
    y = np.array([[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(metrics.concordance_correlation(y, y), [1.0], rtol=1e-6)
    # var 1.25 each, shift 1: 2 * 1.25 / (2.5 + 1)
    np.testing.assert_allclose(metrics.concordance_correlation(y, y + 1), [2.5 / 3.5],
                               rtol=1e-6)
    np.testing.assert_allclose(metrics.pearson_correlation(y, y + 1), [1.0], rtol=1e-6)


@pytest.mark.parametrize("metric,name,kwargs", [
    (lambda: metrics.R2Score(), "R2Score", {}),
    (lambda: "pearson_correlation", "PearsonCorrelation", {}),
], ids=["R2Score", "pearson_by_name"])
def test_in_compiled_fit_equals_keras_on_the_predictions(metric, name, kwargs):
    rng = np.random.default_rng(8)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = (x[:, :2] + 0.3 * rng.normal(size=(32, 2))).astype("float32")
    logged, pred = fit_log_and_predictions(metric(), x, y, "mse", activation=None)
    expected = keras_result(name, kwargs, [((y[i:i + 16], pred[i:i + 16]), None)
                                           for i in (0, 16)])
    np.testing.assert_allclose(logged, expected, rtol=1e-5)


@pytest.mark.parametrize("name,kwargs", [
    ("R2Score", {"class_aggregation": None, "num_regressors": 2}),
    ("PearsonCorrelation", {"axis": 0}),
    ("ConcordanceCorrelation", {"axis": 1}),
], ids=["R2Score", "PearsonCorrelation", "ConcordanceCorrelation"])
def test_config_round_trip_equals_keras_config(name, kwargs):
    m = getattr(metrics, name)(name="m", **kwargs)
    assert m.get_config() == getattr(keras.metrics, name)(name="m", **kwargs).get_config()
    clone = metrics.deserialize(metrics.serialize(m))
    assert type(clone) is type(m) and clone.get_config() == m.get_config()


def test_bad_arguments_and_inputs():
    with pytest.raises(ValueError, match="`class_aggregation` must be one of"):
        metrics.R2Score(class_aggregation="mean")
    with pytest.raises(ValueError, match="`num_regressors` must be >= 0"):
        metrics.R2Score(num_regressors=-1)
    with pytest.raises(ValueError, match=r"expects y_true and y_pred of shape \(batch, outputs\)"):
        metrics.R2Score().update_state(np.zeros((2, 3, 4)), np.zeros((2, 3, 4)))
