"""Compiled metrics' variable paths equal to Keras 3.15.1's.

Keras makes a metric compiled from a string or a function under its own name
(`metrics.get("mae")` is `MeanAbsoluteError()`, a function goes in a
`MeanMetricWrapper`), then renames it to what was written: its variables keep the first
name (`mean_absolute_error/total`), variables a metric makes on its first batch take the
second (`R2Score/sum`). Each model below is built, compiled and fitted one batch by the
same code in Keras and in loopax; the paths of `model.metrics_variables`, of each metric's
variables and the history keys must be the same."""

import numpy as np
import pytest
from keras_reference import keras as real_keras

import loopax

RNG = np.random.default_rng(0)
X = RNG.random((8, 4), dtype=np.float32)
Y = RNG.integers(0, 2, (8, 1)).astype("float32")


def camel_case_metric(y_true, y_pred):
    return y_pred - y_true


camel_case_metric.__name__ = "CamelCaseError"

SINGLE_OUTPUT = {
    "mae_accuracy": ["mae", "accuracy"],
    "aliases": ["mse", "mape", "msle", "acc", "binary_accuracy"],
    "class_names": ["AUC", "Precision", "recall", "RootMeanSquaredError", "BinaryCrossentropy",
                    "mean_absolute_error", "binary_crossentropy"],
    "built_on_first_batch": ["R2Score", "F1Score", "r2_score"],
    "repeated": ["mae", "mae"],
    "function": [camel_case_metric],
    "objects": ["metric_objects"],
}


def metric_objects(library):
    return [library.metrics.MeanAbsoluteError(name="m"), library.metrics.AUC,
            library.metrics.mean_squared_error]


def single_output(library, metrics):
    if metrics == ["metric_objects"]:
        metrics = metric_objects(library)
    inputs = library.Input((4,))
    outputs = library.layers.Dense(1, activation="sigmoid", name="d")(inputs)
    model = library.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse", metrics=metrics)
    history = model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    return model, history


def two_outputs(library, metrics):
    inputs = library.Input((4,))
    first = library.layers.Dense(1, activation="sigmoid", name="a")(inputs)
    second = library.layers.Dense(1, activation="sigmoid", name="b")(inputs)
    model = library.Model(inputs, [first, second])
    model.compile(optimizer="sgd", loss=["mse", "mse"], metrics=metrics)
    history = model.fit(X, [Y, Y], batch_size=8, epochs=1, verbose=0)
    return model, history


TWO_OUTPUTS = {
    "dict": {"a": "mae", "b": ["mse", "AUC"]},
    "list_per_output": [["mae"], ["acc"]],
    "built_on_first_batch": {"b": ["R2Score", "F1Score"]},
}


def described(library, build, metrics):
    library.utils.clear_session()
    model, history = build(library, metrics)
    compiled = [m for m in model.metrics if m.name == "compile_metrics"]
    each = [[v.path for v in m.variables] for c in compiled for m in c.metrics]
    return [v.path for v in model.metrics_variables], each, sorted(history.history)


@pytest.mark.parametrize("case", sorted(SINGLE_OUTPUT))
def test_single_output_metric_paths_are_keras(case):
    ours = described(loopax, single_output, SINGLE_OUTPUT[case])
    theirs = described(real_keras, single_output, SINGLE_OUTPUT[case])
    assert ours == theirs


@pytest.mark.parametrize("case", sorted(TWO_OUTPUTS))
def test_two_output_metric_and_loss_paths_are_keras(case):
    """Also the per-output loss trackers: `compile_loss/a_loss/total`."""
    ours = described(loopax, two_outputs, TWO_OUTPUTS[case])
    theirs = described(real_keras, two_outputs, TWO_OUTPUTS[case])
    assert ours == theirs


def test_mean_metric_wrapper_default_name_is_keras():
    def cubed(y_true, y_pred):
        return (y_pred - y_true) ** 3

    def names(library):
        library.utils.clear_session()
        first, second = (library.metrics.MeanMetricWrapper(cubed) for _ in range(2))
        return first.name, second.name, [v.path for v in first.variables]

    assert names(loopax) == names(real_keras)
