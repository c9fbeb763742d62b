"""The compiled metrics are one `Metric` ("compile_metrics"): `model.metrics`,
`metrics_variables`, the logs and the stateless API treat it like any metric,
with Keras 3's structure (`[loss tracker, compile_metrics]`)."""



import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(8, 3)).astype("float32")
Y = RNG.normal(size=(8, 2)).astype("float32")


def _two_output_model(lib):
    inputs = lib.Input((3,), name="x")
    a = lib.layers.Dense(2, name="a", kernel_initializer="ones")(inputs)
    b = lib.layers.Dense(2, name="b", kernel_initializer="zeros")(inputs)
    return lib.Model(inputs, [a, b])


def _compiled(lib, two_outputs=False):
    if two_outputs:
        model = _two_output_model(lib)
        metrics = {"a": [lib.metrics.MeanAbsoluteError(), "mse"], "b": ["mae"]}
        weighted = {"b": [lib.metrics.MeanSquaredError(name="wmse")]}
    else:
        model = lib.Sequential([lib.Input((3,)),
                                lib.layers.Dense(2, kernel_initializer="ones")])
        metrics = [lib.metrics.MeanAbsoluteError(), "mse"]
        weighted = [lib.metrics.MeanSquaredError(name="wmse")]
    model.compile(optimizer="sgd", loss="mse", metrics=metrics, weighted_metrics=weighted)
    return model


@pytest.mark.parametrize("two_outputs", [False, True], ids=["one_output", "two_outputs"])
def test_structure_and_logs_match_keras(two_outputs):
    ours, theirs = _compiled(loopax, two_outputs), _compiled(keras, two_outputs)
    y = [Y, Y] if two_outputs else Y
    ours_logs = ours.evaluate(X, y, return_dict=True, verbose=0)
    theirs_logs = theirs.evaluate(X, y, return_dict=True, verbose=0)

    compiled = ours.metrics[1]
    assert isinstance(compiled, loopax.metrics.Metric)
    assert [m.name for m in ours.metrics] == [m.name for m in theirs.metrics]
    # Keras's sub-metrics keep their own names and prefix the output's name in
    # `result()`; loopax names them as they are logged.
    assert [m.name for m in compiled.metrics] == list(theirs.metrics[1].result())
    assert [v.name for v in ours.metrics_variables] == [v.name for v in theirs.metrics_variables]
    assert list(ours_logs) == list(theirs_logs)
    for key in theirs_logs:
        np.testing.assert_allclose(ours_logs[key], theirs_logs[key], rtol=1e-5, atol=1e-6)


def test_metrics_variables_are_the_loss_tracker_then_each_compiled_metric():
    model = _compiled(loopax, two_outputs=True)
    model.evaluate(X, [Y, Y], verbose=0)
    tracker, compiled, *per_output_loss = model.metrics
    assert [m.name for m in per_output_loss] == ["a_loss", "b_loss"]
    expected = list(tracker.variables)
    for metric in [*compiled.metrics, *per_output_loss]:
        expected.extend(metric.variables)
    assert [id(v) for v in model.metrics_variables] == [id(v) for v in expected]
    compiled_part = expected[len(tracker.variables):len(tracker.variables) + 8]
    assert [id(v) for v in compiled.variables] == [id(v) for v in compiled_part]


def test_a_metric_object_given_for_two_outputs_is_listed_once_per_output():
    shared = loopax.metrics.MeanAbsoluteError()
    model = _two_output_model(loopax)
    model.compile(optimizer="sgd", loss="mse", metrics=[shared])
    model.evaluate(X, [Y, Y], verbose=0)
    compiled = model.metrics[1]
    first, second = compiled.metrics
    assert first is shared and second is not shared
    assert [id(v) for v in compiled.variables] == [
        id(v) for v in [*shared.variables, *second.variables]]


def test_stateless_api_matches_the_stateful_one():
    model = _compiled(loopax)
    model.evaluate(X, Y, verbose=0)
    compiled = model.metrics[1]
    compiled.reset_state()
    values = compiled.stateless_reset_state()
    values = compiled.stateless_update_state(values, Y, X[:, :2])
    stateless = compiled.stateless_result(values)
    compiled.update_state(Y, X[:, :2])
    stateful = compiled.result()
    assert list(stateless) == list(stateful) == ["mean_absolute_error", "mse", "wmse"]
    for key in stateful:
        np.testing.assert_allclose(stateless[key], stateful[key], rtol=1e-6)
    compiled.reset_state()
    assert all(float(np.sum(v.value)) == 0.0 for v in compiled.variables)


def test_stateless_update_state_checks_the_values():
    model = _compiled(loopax)
    model.evaluate(X, Y, verbose=0)
    with pytest.raises(ValueError, match="CompileMetrics.stateless_update_state.*entries"):
        model.metrics[1].stateless_update_state([], Y, X[:, :2])


@pytest.mark.parametrize("metrics", [
    ["mae", "mse"],                 # one entry per output, as Keras 3 reads it
    ["mae", ["mse", "mae"]],
    [["mae"], "mse"],
    ("mse", "mae"),
], ids=repr)
def test_a_list_with_one_entry_per_output_matches_keras(metrics):
    logs = {}
    for lib in (loopax, keras):
        model = _two_output_model(lib)
        model.compile(optimizer="sgd", loss="mse", metrics=metrics,
                      weighted_metrics=["mse", "mae"])
        logs[lib] = model.evaluate(X, [Y, Y], return_dict=True, verbose=0)
    assert list(logs[loopax]) == list(logs[keras])
    for key, value in logs[keras].items():
        np.testing.assert_allclose(logs[loopax][key], value, rtol=1e-5, atol=1e-6)


def test_a_list_of_other_length_applies_to_every_output_with_a_warning():
    # Keras 3 refuses this list; loopax reads it as tf.keras 2 did, and says so.
    model = _two_output_model(loopax)
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    with pytest.warns(UserWarning, match="one entry per output"):
        logs = model.evaluate(X, [Y, Y], return_dict=True, verbose=0)
    expected = [np.mean(np.abs(Y - X @ np.ones((3, 2), "float32"))), np.mean(np.abs(Y))]
    np.testing.assert_allclose([logs["a_mae"], logs["b_mae"]], expected, rtol=1e-5)
