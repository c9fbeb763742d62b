"""One compiled program per kind and batch shape, as Keras's one `test_step` /
`predict_step`: fit()'s validation, evaluate() and predict() on datasets of
other sizes reuse the step compiled for the first (before: device data was an
argument of every program, so each dataset size compiled the step again)."""

import numpy as np
from trainer_testlib import counted_mlp, regression_data

import loopax

BATCH = 8


def fitted_with_validation():
    """A model fitted 1 epoch on 64 rows, validated on 32 other rows (full
    batches of 8 everywhere); its trace counter."""
    loopax.utils.set_random_seed(0)
    x, y = regression_data(n=64)
    vx, vy = regression_data(n=32, seed=1)
    model, counter = counted_mlp()
    model.compile(optimizer=loopax.optimizers.SGD(0.05), loss="mse")
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, validation_data=(vx, vy))
    return model, counter


def test_evaluate_on_other_data_reuses_the_validation_step():
    model, counter = fitted_with_validation()
    ex, ey = regression_data(n=48, seed=2)
    traced = counter.runs
    loss = model.evaluate(ex, ey, batch_size=BATCH, verbose=0)
    assert counter.runs == traced   # nothing traced, so nothing compiled
    expected = np.mean((model.predict(ex, batch_size=BATCH, verbose=0) - ey) ** 2)
    np.testing.assert_allclose(loss, expected, rtol=1e-5)


def test_predict_on_data_of_another_size_reuses_the_predict_step():
    model, counter = fitted_with_validation()
    first = model.predict(regression_data(n=24, seed=3)[0], batch_size=BATCH, verbose=0)
    traced = counter.runs
    x, _ = regression_data(n=40, seed=4)
    out = model.predict(x, batch_size=BATCH, verbose=0)
    assert counter.runs == traced
    assert first.shape == (24, 1) and out.shape == (40, 1)
    kernel0, bias0, kernel1, bias1 = model.get_weights()
    np.testing.assert_allclose(out, np.tanh(x @ kernel0 + bias0) @ kernel1 + bias1,
                               rtol=1e-5, atol=1e-6)
