"""IoU, MeanIoU, BinaryIoU, OneHotIoU and OneHotMeanIoU against Keras 3:
random class ids and scores, ignore_class, out-of-range ids, integer and
float weights (truncated by the default int32 dtype, as Keras), several
batches, statelessly under jit, in a compiled fit; config; bad arguments."""

import numpy as np
import pytest
from keras_metric_pairs import (
    assert_matches_keras,
    fit_log_and_predictions,
    keras,
    keras_result,
)

from loopax import metrics


def sparse_batches(seed, classes=4, shape=(6, 5), weights=None, n=2):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = rng.integers(0, classes, size=shape)
        p = rng.integers(0, classes, size=shape)
        y.flat[0], p.flat[1] = classes, -1          # out of range: not counted
        w = {None: None, "int": rng.integers(0, 3, size=shape),
             "float": rng.uniform(0, 3, size=shape).astype("float32")}[weights]
        out.append(((y, p), w))
    return out


def dense_batches(seed, classes=3, n=2, weighted=False):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = np.eye(classes, dtype="float32")[rng.integers(0, classes, size=10)]
        p = rng.uniform(size=(10, classes)).astype("float32")
        w = rng.uniform(0, 2, size=10).astype("float32") if weighted else None
        out.append(((y, p), w))
    return out


@pytest.mark.parametrize("weights", [None, "int"], ids=str)
@pytest.mark.parametrize("ignore_class", [None, 2], ids=lambda c: f"ignore{c}")
def test_mean_iou_and_iou_match_keras(weights, ignore_class):
    data = sparse_batches(1, weights=weights)
    assert_matches_keras("MeanIoU", {"num_classes": 4, "ignore_class": ignore_class}, data)
    assert_matches_keras("IoU", {"num_classes": 4, "target_class_ids": [3, 1],
                                 "ignore_class": ignore_class}, data)


@pytest.mark.filterwarnings("ignore:.*float")
def test_float_weights_truncate_with_int_dtype_and_count_with_float_dtype():
    data = sparse_batches(2, weights="float")
    with pytest.warns(UserWarning, match="float sample weights are truncated"):
        metrics.MeanIoU(num_classes=4).update_state(*data[0][0], sample_weight=data[0][1])
    assert_matches_keras("MeanIoU", {"num_classes": 4}, data)
    assert_matches_keras("MeanIoU", {"num_classes": 4, "dtype": "float32"}, data)


def test_dense_labels_and_predictions_along_axis():
    data = dense_batches(3)
    assert_matches_keras("MeanIoU", {"num_classes": 3, "sparse_y_true": False,
                                     "sparse_y_pred": False}, data)
    moved = [((np.moveaxis(y, -1, 0), np.moveaxis(p, -1, 0)), w) for (y, p), w in data]
    assert_matches_keras("OneHotMeanIoU", {"num_classes": 3, "axis": 0}, moved)


@pytest.mark.parametrize("dtype", [None, "float32"], ids=str)
def test_one_hot_variants_match_keras(dtype):
    data = dense_batches(4, weighted=dtype is not None)
    assert_matches_keras("OneHotIoU", {"num_classes": 3, "target_class_ids": [0, 2],
                                       "dtype": dtype}, data)
    assert_matches_keras("OneHotMeanIoU", {"num_classes": 3, "ignore_class": 1,
                                           "dtype": dtype}, data)
    sparse_pred = [((y, np.argmax(p, -1)), w) for (y, p), w in data]
    assert_matches_keras("OneHotMeanIoU", {"num_classes": 3, "sparse_y_pred": True,
                                           "dtype": dtype}, sparse_pred)


@pytest.mark.parametrize("target", [(0, 1), [0], [1]], ids=str)
def test_binary_iou_matches_keras(target):
    rng = np.random.default_rng(5)
    data = [((rng.integers(0, 2, size=12), rng.uniform(size=12).astype("float32")),
             rng.integers(1, 3, size=12)) for _ in range(2)]
    assert_matches_keras("BinaryIoU", {"target_class_ids": target, "threshold": 0.3}, data)


def test_hand_example_and_batch_of_one():
    # cm = [[1, 1], [1, 1]]: each class 1 / (2 + 2 - 1).
    m = metrics.MeanIoU(num_classes=2)
    m.update_state([0, 0, 1, 1], [0, 1, 0, 1])
    np.testing.assert_allclose(m.result(), 1 / 3, rtol=1e-6)
    m.reset_state()
    np.testing.assert_allclose(m.result(), 0.0)
    assert_matches_keras("MeanIoU", {"num_classes": 3}, [(([2], [2]), None)])


def test_in_compiled_fit_equals_keras_on_the_predictions():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = np.eye(3, dtype="float32")[rng.integers(0, 3, size=32)]
    logged, pred = fit_log_and_predictions(metrics.OneHotMeanIoU(num_classes=3), x, y,
                                           "categorical_crossentropy", activation="softmax")
    expected = keras_result("OneHotMeanIoU", {"num_classes": 3},
                            [((y[i:i + 16], pred[i:i + 16]), None) for i in (0, 16)])
    np.testing.assert_allclose(logged, expected, rtol=1e-5)


@pytest.mark.parametrize("name,kwargs", [
    ("IoU", {"num_classes": 3, "target_class_ids": [1], "ignore_class": 0, "axis": 1}),
    ("MeanIoU", {"num_classes": 3, "sparse_y_pred": False}),
    ("BinaryIoU", {"target_class_ids": [1], "threshold": 0.2}),
    ("OneHotIoU", {"num_classes": 4, "target_class_ids": [0, 3]}),
    ("OneHotMeanIoU", {"num_classes": 4, "dtype": "float32"}),
], ids=["IoU", "MeanIoU", "BinaryIoU", "OneHotIoU", "OneHotMeanIoU"])
def test_config_round_trip_equals_keras_config(name, kwargs):
    m = getattr(metrics, name)(name="m", **kwargs)
    assert m.get_config() == getattr(keras.metrics, name)(name="m", **kwargs).get_config()
    clone = metrics.deserialize(metrics.serialize(m))
    assert type(clone) is type(m) and clone.get_config() == m.get_config()


def test_bad_target_class_ids():
    with pytest.raises(ValueError, match=r"`target_class_ids` must be class ids in \[0, 3\)"):
        metrics.IoU(num_classes=3, target_class_ids=[1, 3])
    with pytest.raises(ValueError, match=r"`target_class_ids` must be class ids in \[0, 2\)"):
        metrics.BinaryIoU(target_class_ids=[2])


def test_one_weight_per_sample_spreads_over_a_segmentation_map():
    rng = np.random.default_rng(7)
    y, p = rng.integers(0, 3, size=(2, 4, 5, 5))
    w = rng.integers(0, 3, size=4)
    expected = keras_result("MeanIoU", {"num_classes": 3},
                            [((y, p), np.broadcast_to(w[:, None, None], y.shape))])
    m = metrics.MeanIoU(num_classes=3)
    m.update_state(y, p, sample_weight=w)
    np.testing.assert_allclose(m.result(), expected, rtol=1e-6)
