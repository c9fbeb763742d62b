"""Runs one metric class of Keras 3 (the reference) and of loopax on the same
batches, statefully and (loopax) statelessly under jit, for the parity tests
of tests/metrics/. Importing it skips the test module when Keras is missing."""

import warnings

import jax
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")


def keras_result(name, kwargs, batches):
    """Keras's `result()` after `update_state(*batch)` for each batch."""
    metric = getattr(keras.metrics, name)(**kwargs)
    with warnings.catch_warnings():
        # Keras asks JAX for int64 (IoU's confusion matrix) without x64.
        warnings.filterwarnings("ignore", "Explicitly requested dtype int64")
        for args, weight in batches:
            metric.update_state(*args, sample_weight=weight)
        return np.asarray(metric.result())


def loopax_results(name, kwargs, batches):
    """(stateful result, stateless-under-jit result) of loopax's metric."""
    metric = getattr(loopax.metrics, name)(**kwargs)
    for args, weight in batches:
        metric.update_state(*args, sample_weight=weight)
    stateful = np.asarray(metric.result())

    twin = getattr(loopax.metrics, name)(**kwargs)
    if hasattr(twin, "build_from_shapes"):
        twin.build_from_shapes(np.shape(batches[0][0][0]), np.shape(batches[0][0][-1]))
    values = twin.stateless_reset_state()
    step = jax.jit(lambda v, args, w: twin.stateless_update_state(v, *args, sample_weight=w))
    for args, weight in batches:
        values = step(values, args, weight)
    return stateful, np.asarray(twin.stateless_result(values))


def assert_matches_keras(name, kwargs, batches, rtol=1e-5, atol=1e-6):
    """loopax's metric (stateful and stateless) equals Keras's on `batches`,
    a list of ((y_true, y_pred), sample_weight or None)."""
    expected = keras_result(name, kwargs, batches)
    stateful, stateless = loopax_results(name, kwargs, batches)
    assert stateful.shape == expected.shape, (stateful.shape, expected.shape)
    np.testing.assert_allclose(stateful, expected, rtol=rtol, atol=atol)
    np.testing.assert_allclose(stateless, stateful, rtol=1e-6, atol=1e-7)
    return expected


def fit_log_and_predictions(metric, x, y, loss, activation="sigmoid", batch_size=16,
                            sample_weight=None):
    """(the epoch log of `metric` from a compiled, jitted loopax `fit` that
    does not move the weights (learning rate 0), the model's predictions):
    the log must equal the metric of those predictions over all batches."""
    loopax.utils.set_random_seed(0)
    model = loopax.Sequential([loopax.Input(x.shape[1:]),
                               loopax.layers.Dense(y.shape[-1], activation=activation)])
    compile_kwargs = {"weighted_metrics" if sample_weight is not None else "metrics": [metric]}
    model.compile(optimizer=loopax.optimizers.SGD(0.0), loss=loss, jit_compile=True,
                  **compile_kwargs)
    history = model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0, shuffle=False,
                        sample_weight=sample_weight)
    name = metric if isinstance(metric, str) else metric.name
    return np.asarray(history.history[name][0]), np.asarray(model.predict(x, verbose=0))
