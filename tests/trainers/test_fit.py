"""fit / evaluate / predict against independent expectations."""

import hypothesis
import hypothesis.strategies as st
import numpy as np
import pytest
from trainer_testlib import Recorder, Snapshot, counted_mlp, mlp, regression_data

import loopax as keras


@pytest.fixture(scope="module")
def trained():
    """One compiled MLP reused (weights restored) by the tests below: one compile."""
    keras.utils.set_random_seed(0)
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)  # builds and compiles
    return model, Snapshot(model), x, y


def _fit(model, snapshot, x, y, spe, **kwargs):
    snapshot.restore()
    model.steps_per_execution = spe
    keras.utils.set_random_seed(1)
    return model.fit(x, y, batch_size=16, verbose=0, **kwargs)


def test_fused_and_unfused_training_give_the_same_weights(trained):
    model, snapshot, x, y = trained
    runs = {}
    for spe in (1, 3, "auto"):
        history = _fit(model, snapshot, x, y, spe, epochs=3)
        runs[spe] = (model.get_weights(), history.history["loss"])
    for spe in (3, "auto"):
        for a, b in zip(runs[1][0], runs[spe][0]):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(runs[1][1], runs[spe][1], rtol=1e-6)


@hypothesis.settings(max_examples=8, deadline=None)
@hypothesis.given(spe=st.integers(1, 9))
def test_any_steps_per_execution_gives_the_same_weights(trained, spe):
    model, snapshot, x, y = trained
    _fit(model, snapshot, x, y, 1, epochs=2)
    reference = model.get_weights()
    _fit(model, snapshot, x, y, spe, epochs=2)
    for a, b in zip(reference, model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("spe", [1, 3])
def test_callback_hooks_order_and_counts(trained, spe):
    model, snapshot, x, y = trained
    recorder = Recorder()
    _fit(model, snapshot, x, y, spe, epochs=2, callbacks=[recorder],
         validation_data=(x[:32], y[:32]))
    steps = 4
    expected = [("train_begin",)]
    for epoch in range(2):
        expected.append(("epoch_begin", epoch))
        for first in range(0, steps, spe):
            last = min(first + spe, steps) - 1
            expected += [("batch_begin", first), ("batch_end", last)]
        expected.append(("test_begin",))
        for first in range(0, 2, spe):
            last = min(first + spe, 2) - 1
            expected += [("test_batch_begin", first), ("test_batch_end", last)]
        expected += [("test_end",), ("epoch_end", epoch)]
    expected.append(("train_end",))
    assert recorder.calls == expected


def test_callback_sees_current_weights(trained):
    model, snapshot, x, y = trained
    seen = []

    class Peek(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(self.model.get_weights()[0].copy())

    _fit(model, snapshot, x, y, 2, epochs=1, callbacks=[Peek()], shuffle=False)
    after_two = seen[0]
    # Reference: the same two steps, and nothing else.
    _fit(model, snapshot, x, y, 1, epochs=1, shuffle=False, steps_per_epoch=2)
    np.testing.assert_allclose(after_two, model.get_weights()[0], rtol=1e-6)


def test_validation_split_is_validation_data_on_the_last_rows(trained):
    model, snapshot, x, y = trained
    a = _fit(model, snapshot, x, y, "auto", epochs=2, validation_split=0.25,
             shuffle=False).history
    b = _fit(model, snapshot, x[:48], y[:48], "auto", epochs=2,
             validation_data=(x[48:], y[48:]), shuffle=False).history
    assert sorted(a) == ["loss", "mae", "val_loss", "val_mae"]
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-6)
    # val_loss is evaluate() on the validation rows after the epoch.
    assert model.evaluate(x[48:], y[48:], batch_size=16, verbose=0)[0] == pytest.approx(
        b["val_loss"][-1], rel=1e-5)


def test_evaluate_and_predict_match_a_direct_computation(trained):
    model, snapshot, x, y = trained
    snapshot.restore()
    y_pred = np.asarray(model(x), np.float64)
    np.testing.assert_allclose(model.predict(x, batch_size=16, verbose=0), y_pred, rtol=1e-5)
    loss, mae = model.evaluate(x, y, batch_size=16, verbose=0)
    assert loss == pytest.approx(np.mean((y_pred - y) ** 2), rel=1e-5)
    assert mae == pytest.approx(np.mean(np.abs(y_pred - y)), rel=1e-5)
    logs = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    assert logs == pytest.approx({"loss": loss, "mae": mae})


def test_on_batch_methods(trained):
    model, snapshot, x, y = trained
    snapshot.restore()
    model.reset_metrics()
    y_pred = np.asarray(model(x[:16]), np.float64)
    np.testing.assert_allclose(model.predict_on_batch(x[:16]), y_pred, rtol=1e-5)
    loss, mae = model.test_on_batch(x[:16], y[:16])
    assert loss == pytest.approx(np.mean((y_pred - y[:16]) ** 2), rel=1e-5)
    before = model.get_weights()
    logs = model.train_on_batch(x[:16], y[:16], return_dict=True)
    assert set(logs) == {"loss", "mae"}
    assert not np.allclose(before[0], model.get_weights()[0])


def test_partial_last_batch_compiles_once():
    x, y = regression_data(n=40)
    model, counter = counted_mlp()
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)   # 16 + 16 + 8
    runs = counter.runs           # building, checking, compiling the loop and the last step
    model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    assert counter.runs == runs   # every epoch reuses both compiled functions


def test_sample_weight_and_class_weight_against_hand_computed_loss():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 2)).astype("float32")
    labels = (rng.random(32) > 0.5).astype("int32")
    y = labels[:, None].astype("float32")
    inputs = keras.Input(shape=(2,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    w0 = model.get_weights()
    y_pred = np.asarray(model(x), np.float64)
    per_sample = (y_pred - y)[:, 0] ** 2
    weights = np.where(labels == 1, 3.0, 0.5)

    history = model.fit(x, y, sample_weight=weights, batch_size=32, epochs=1, verbose=0,
                        shuffle=False)
    assert history.history["loss"][0] == pytest.approx(np.mean(weights * per_sample), rel=1e-5)
    after_sample_weight = model.get_weights()

    model.set_weights(w0)
    model.optimizer.set_weights([np.zeros_like(v) for v in model.optimizer.get_weights()])
    model.optimizer.learning_rate = 0.1
    history = model.fit(x, y, class_weight={0: 0.5, 1: 3.0}, batch_size=32, epochs=1,
                        verbose=0, shuffle=False)
    assert history.history["loss"][0] == pytest.approx(np.mean(weights * per_sample), rel=1e-5)
    for a, b in zip(after_sample_weight, model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_weight_regularization_is_in_the_loss_and_the_gradient():
    """An unbuilt Sequential with an L2 kernel penalty, one full-batch SGD step:
    the reported loss and the new weights follow the closed form."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 2)).astype("float32")
    y = rng.normal(size=(32, 1)).astype("float32")
    model = keras.Sequential([keras.layers.Dense(
        1, kernel_regularizer=keras.regularizers.L2(0.1), bias_initializer="ones")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)   # builds it
    kernel = np.array([[0.5], [-0.3]])
    bias = np.ones(1)
    model.set_weights([kernel.astype("float32"), bias.astype("float32")])
    model.optimizer.set_weights([np.zeros_like(v) for v in model.optimizer.get_weights()])
    model.optimizer.learning_rate = 0.1
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)
    err = x.astype(np.float64) @ kernel + bias - y
    expected_loss = np.mean(err ** 2) + 0.1 * np.sum(kernel ** 2)
    assert history.history["loss"][0] == pytest.approx(expected_loss, rel=1e-5)
    grad_kernel = 2 * x.T.astype(np.float64) @ err / 32 + 0.2 * kernel
    np.testing.assert_allclose(model.get_weights()[0], kernel - 0.1 * grad_kernel, rtol=1e-5)
