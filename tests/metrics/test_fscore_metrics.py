"""F1Score and FBetaScore against Keras 3: every `average`, a threshold or the
row maximum, soft labels, sample weights, several batches; statelessly under
jit; in a compiled fit; config; bad arguments."""

import numpy as np
import pytest
from keras_metric_pairs import (
    assert_matches_keras,
    fit_log_and_predictions,
    keras,
    keras_result,
)

from loopax import metrics

AVERAGES = [None, "micro", "macro", "weighted"]


def batches(seed, classes=4, weighted=False, soft=False, n=2):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = rng.integers(0, 2, size=(12, classes)).astype("float32")
        if soft:
            y = y * 0.8 + 0.1
        p = rng.uniform(size=(12, classes)).astype("float32")
        p[0] = 0.0                     # an all-zero row has no maximum to count
        p[1, :2] = 0.5                 # a tie for the maximum counts both
        w = rng.uniform(0, 2, size=12).astype("float32") if weighted else None
        out.append(((y, p), w))
    return out


@pytest.mark.parametrize("average", AVERAGES, ids=str)
@pytest.mark.parametrize("threshold", [None, 0.5], ids=lambda t: f"threshold{t}")
def test_f1_matches_keras(average, threshold):
    result = assert_matches_keras("F1Score", {"average": average, "threshold": threshold},
                                  batches(1, weighted=True))
    assert result.shape == ((4,) if average is None else ())


@pytest.mark.parametrize("average", AVERAGES, ids=str)
def test_fbeta_soft_labels_and_threshold_one(average):
    assert_matches_keras("FBetaScore", {"average": average, "beta": 2.0, "threshold": 0.3},
                         batches(2, soft=True))
    assert_matches_keras("FBetaScore", {"average": average, "beta": 0.5, "threshold": 1.0},
                         batches(3, classes=2))


def test_batch_of_one():
    assert_matches_keras("FBetaScore", {"beta": 0.7},
                         [(([[0.0, 1.0, 0.0]], [[0.2, 0.3, 0.1]]), None)])


def test_hand_example():
    # Column 0: tp 2, fp 0, fn 1 -> P 1, R 2/3, F1 0.8.
    m = metrics.F1Score(threshold=0.5)
    m.update_state([[1, 1, 1], [1, 0, 0], [1, 1, 0]],
                   [[0.2, 0.6, 0.7], [0.6, 0.6, 0.6], [0.6, 0.8, 0.0]])
    np.testing.assert_allclose(m.result()[0], 0.8, rtol=1e-5)
    m.reset_state()
    np.testing.assert_allclose(m.result(), 0.0)


@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_in_compiled_fit_equals_keras_on_the_predictions(average):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(48, 6)).astype("float32")
    y = np.eye(3, dtype="float32")[rng.integers(0, 3, size=48)]
    w = rng.uniform(0.2, 2, size=48).astype("float32")
    metric = metrics.F1Score(average=average)
    logged, pred = fit_log_and_predictions(metric, x, y, "categorical_crossentropy",
                                           activation="softmax", sample_weight=w)
    expected = keras_result("F1Score", {"average": average},
                            [((y[i:i + 16], pred[i:i + 16]), w[i:i + 16])
                             for i in range(0, 48, 16)])
    np.testing.assert_allclose(logged, expected, rtol=1e-5)


def test_string_name_in_compile_builds_the_state():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(16, 3)).astype("float32")
    y = np.eye(2, dtype="float32")[rng.integers(0, 2, size=16)]
    logged, pred = fit_log_and_predictions("f1_score", x, y, "categorical_crossentropy",
                                           activation="softmax", batch_size=8)
    expected = keras_result("F1Score", {}, [((y[:8], pred[:8]), None),
                                            ((y[8:], pred[8:]), None)])
    np.testing.assert_allclose(logged, expected, rtol=1e-5)
    assert isinstance(metrics.get("f1_score"), metrics.F1Score)
    assert isinstance(metrics.get("f_beta_score"), metrics.FBetaScore)


@pytest.mark.parametrize("name", ["F1Score", "FBetaScore"])
def test_config_round_trip_equals_keras_config(name):
    kwargs = {"average": "macro", "threshold": 0.4, "name": "f"}
    if name == "FBetaScore":
        kwargs["beta"] = 2.0
    m = getattr(metrics, name)(**kwargs)
    assert m.get_config() == getattr(keras.metrics, name)(**kwargs).get_config()
    clone = metrics.deserialize(metrics.serialize(m))
    assert type(clone) is type(m) and clone.get_config() == m.get_config()


def test_bad_arguments_and_inputs():
    with pytest.raises(ValueError, match="`average` must be one of"):
        metrics.F1Score(average="samples")
    with pytest.raises(ValueError, match="`beta` must be a Python float > 0"):
        metrics.FBetaScore(beta=2)
    with pytest.raises(ValueError, match="`beta` must be a Python float > 0"):
        metrics.FBetaScore(beta=-1.0)
    with pytest.raises(ValueError, match="`threshold` must be None or a Python float in"):
        metrics.F1Score(threshold=0.0)
    with pytest.raises(ValueError, match="`threshold` must be None or a Python float in"):
        metrics.F1Score(threshold=1)
    with pytest.raises(ValueError, match=r"expects y_true and y_pred of shape \(batch, classes\)"):
        metrics.F1Score().update_state([0, 1, 1], [0.2, 0.7, 0.9])
