"""SensitivityAtSpecificity, SpecificityAtSensitivity, PrecisionAtRecall and
RecallAtPrecision against Keras 3: random scores over several batches, with
sample weights, class_id, few thresholds; statelessly under jit; in fit."""

import numpy as np
import pytest
from keras_metric_pairs import (
    assert_matches_keras,
    fit_log_and_predictions,
    keras,
    keras_result,
)

from loopax import metrics

NAMES = {"SensitivityAtSpecificity": "specificity", "SpecificityAtSensitivity": "sensitivity",
         "PrecisionAtRecall": "recall", "RecallAtPrecision": "precision"}


def batches(seed, shape=(24,), weighted=False, n=2):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = rng.integers(0, 2, size=shape).astype("float32")
        p = rng.uniform(size=shape).astype("float32")
        p.flat[:3] = [0.0, 0.5, 1.0]   # on thresholds, and the ends
        w = rng.uniform(0, 2, size=shape[0]).astype("float32") if weighted else None
        out.append(((y, p), w))
    return out


@pytest.mark.parametrize("name", sorted(NAMES))
@pytest.mark.parametrize("value", [0.0, 0.55, 1.0], ids=lambda v: f"value{v}")
def test_matches_keras_over_batches(name, value):
    assert_matches_keras(name, {NAMES[name]: value}, batches(1))


@pytest.mark.parametrize("name", sorted(NAMES))
@pytest.mark.parametrize("num_thresholds", [1, 7], ids=lambda n: f"thresholds{n}")
def test_weighted_and_few_thresholds(name, num_thresholds):
    assert_matches_keras(name, {NAMES[name]: 0.5, "num_thresholds": num_thresholds},
                         batches(2, weighted=True))


@pytest.mark.parametrize("name", sorted(NAMES))
def test_class_id_of_a_multiclass_output(name):
    assert_matches_keras(name, {NAMES[name]: 0.6, "class_id": 2},
                         batches(3, shape=(16, 4), weighted=True))


def test_batch_of_one_and_unreachable_constraint():
    assert_matches_keras("RecallAtPrecision", {"precision": 1.0},
                         [(([1.0], [0.3]), None), (([0.0], [0.9]), None)])
    assert_matches_keras("PrecisionAtRecall", {"recall": 0.7}, [(([0.0], [0.2]), None)])


def test_hand_example():
    # Specificity >= 0.5 first at the threshold between 0.3 and 0.8: the 0.8s
    # are positive, so sensitivity is 1 of 2.
    m = metrics.SensitivityAtSpecificity(0.5)
    m.update_state([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8])
    np.testing.assert_allclose(m.result(), 0.5)
    m.reset_state()
    np.testing.assert_allclose(m.result(), 0.0)
    assert [v.path for v in m.variables] == [
        f"{m.name}/{k}" for k in ("true_positives", "false_positives", "true_negatives",
                                  "false_negatives")]


@pytest.mark.parametrize("name", sorted(NAMES))
def test_config_round_trip_and_keras_config(name):
    kwargs = {NAMES[name]: 0.3, "num_thresholds": 11, "class_id": 1, "name": "m"}
    m = getattr(metrics, name)(**kwargs)
    config = m.get_config()
    assert config == getattr(keras.metrics, name)(**kwargs).get_config()
    clone = metrics.deserialize(metrics.serialize(m))
    assert type(clone) is type(m) and clone.get_config() == config


@pytest.mark.parametrize("name", sorted(NAMES))
def test_bad_arguments(name):
    cls = getattr(metrics, name)
    with pytest.raises(ValueError, match=f"`{NAMES[name]}` must be a number in \\[0, 1\\]"):
        cls(1.5)
    with pytest.raises(ValueError, match="`num_thresholds` must be an integer > 0"):
        cls(0.5, num_thresholds=0)


def test_in_compiled_fit_equals_keras_on_the_predictions():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(48, 5)).astype("float32")
    y = rng.integers(0, 2, size=(48, 1)).astype("float32")
    w = rng.uniform(0.2, 2, size=48).astype("float32")
    metric = metrics.PrecisionAtRecall(0.5, num_thresholds=50)
    logged, pred = fit_log_and_predictions(metric, x, y, "binary_crossentropy", sample_weight=w)
    expected = keras_result("PrecisionAtRecall", {"recall": 0.5, "num_thresholds": 50},
                            [((y[i:i + 16], pred[i:i + 16]), w[i:i + 16])
                             for i in range(0, 48, 16)])
    np.testing.assert_allclose(logged, expected, rtol=1e-5)
