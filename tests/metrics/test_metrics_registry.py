"""`loopax.metrics.get`, `resolve` and the choice of accuracy."""

import numpy as np
import pytest

from loopax import losses, metrics
from loopax.src import metrics as src_metrics


@pytest.mark.parametrize("name, cls", [
    ("mae", metrics.MeanAbsoluteError), ("mse", metrics.MeanSquaredError),
    ("mean_squared_error", metrics.MeanSquaredError), ("accuracy", metrics.Accuracy),
    ("acc", metrics.Accuracy), ("categorical_accuracy", metrics.CategoricalAccuracy),
    ("sparse_categorical_accuracy", metrics.SparseCategoricalAccuracy),
    ("top_k_categorical_accuracy", metrics.TopKCategoricalAccuracy),
    ("AUC", metrics.AUC), ("auc", metrics.AUC), ("Precision", metrics.Precision),
    ("recall", metrics.Recall), ("RootMeanSquaredError", metrics.RootMeanSquaredError),
    ("kl_divergence", metrics.KLDivergence),
])
def test_get_by_name(name, cls):
    assert type(metrics.get(name)) is cls


def test_get_instances_classes_callables_and_unknown():
    m = metrics.Mean()
    assert metrics.get(m) is m
    assert isinstance(metrics.get(metrics.AUC), metrics.AUC)
    fn = metrics.binary_accuracy
    assert metrics.get(fn) is fn
    with pytest.raises(ValueError) as e:
        metrics.get("accuracyy")
    assert "'accuracy'" in str(e.value) and "AUC" in str(e.value) and "mae" in str(e.value)


def test_config_round_trip():
    auc = metrics.AUC(num_thresholds=7, curve="PR", name="prc")
    clone = metrics.deserialize(metrics.serialize(auc))
    assert isinstance(clone, metrics.AUC)
    assert clone.get_config() == auc.get_config()
    top = metrics.SparseTopKCategoricalAccuracy.from_config(
        metrics.SparseTopKCategoricalAccuracy(k=3).get_config())
    assert top._fn_kwargs["k"] == 3


@pytest.mark.parametrize("loss, y_true, y_pred, cls", [
    # The loss decides when it names the label format.
    ("binary_crossentropy", (8, 5), (8, 5), metrics.BinaryAccuracy),
    (losses.BinaryCrossentropy(from_logits=True), (8, 1), (8, 1), metrics.BinaryAccuracy),
    ("sparse_categorical_crossentropy", (8, 1), (8, 10), metrics.SparseCategoricalAccuracy),
    (losses.SparseCategoricalCrossentropy, (8,), (8, 10), metrics.SparseCategoricalAccuracy),
    (losses.categorical_crossentropy, (8, 10), (8, 10), metrics.CategoricalAccuracy),
    ("hinge", (8, 1), (8, 1), metrics.BinaryAccuracy),
    # Otherwise the shapes decide (Keras 3's rule).
    ("mse", (8, 1), (8, 1), metrics.BinaryAccuracy),
    (None, (8,), (8, 10), metrics.SparseCategoricalAccuracy),
    (None, (8, 1), (8, 10), metrics.SparseCategoricalAccuracy),
    (lambda t, p: (t - p) ** 2, (8, 10), (8, 10), metrics.CategoricalAccuracy),
], ids=["binary_crossentropy", "BinaryCrossentropy-logits", "sparse_categorical_crossentropy",
        "SparseCategoricalCrossentropy-class", "categorical_crossentropy-function", "hinge",
        "mse-shapes", "no-loss-flat-labels", "no-loss-column-labels",
        "custom-loss-function"])
def test_get_accuracy_for(loss, y_true, y_pred, cls):
    m = metrics.get_accuracy_for(loss, y_true, y_pred)
    assert type(m) is cls and m.name == "accuracy"


def test_get_accuracy_for_needs_loss_or_shapes():
    with pytest.raises(ValueError, match="shapes"):
        metrics.get_accuracy_for("mse")


def test_resolve_for_compile_keeps_the_written_name():
    mae = src_metrics.resolve("mae")
    assert isinstance(mae, metrics.MeanAbsoluteError) and mae.name == "mae"
    # Made with its own name, renamed after (Keras 3.15's paths)
    assert [v.path for v in mae.variables] == ["mean_absolute_error/total",
                                               "mean_absolute_error/count"]
    acc = src_metrics.resolve("acc", (4,), (4, 3), loss="sparse_categorical_crossentropy")
    assert isinstance(acc, metrics.SparseCategoricalAccuracy) and acc.name == "acc"
    custom = src_metrics.resolve(lambda t, p: np.abs(t - p))
    assert isinstance(custom, metrics.MeanMetricWrapper)
    auc = metrics.AUC()
    assert src_metrics.resolve(auc) is auc
