"""Seed 004 (customizing what happens in fit() with JAX): the three variants
run as written, with `import loopax as keras` (only `keras_core` -> loopax,
and small data so the suite stays fast)."""

import jax
import numpy as np
import pytest

import loopax as keras


class CustomModel1(keras.Model):
    def compute_loss_and_updates(self, trainable_variables, non_trainable_variables, x, y,
                                 training=False):
        y_pred, non_trainable_variables = self.stateless_call(
            trainable_variables,
            non_trainable_variables,
            x,
            training=training,
        )
        loss = self.compute_loss(x, y, y_pred)
        return loss, (y_pred, non_trainable_variables)

    def train_step(self, state, data):
        (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            metrics_variables,
        ) = state
        x, y = data

        grad_fn = jax.value_and_grad(self.compute_loss_and_updates, has_aux=True)
        (loss, (y_pred, non_trainable_variables)), grads = grad_fn(
            trainable_variables,
            non_trainable_variables,
            x,
            y,
            training=True,
        )
        (
            trainable_variables,
            optimizer_variables,
        ) = self.optimizer.stateless_apply(
            optimizer_variables, grads, trainable_variables
        )

        new_metrics_vars = []
        for metric in self.metrics:
            this_metric_vars = metrics_variables[
                len(new_metrics_vars) : len(new_metrics_vars) + len(metric.variables)
            ]
            if metric.name == "loss":
                this_metric_vars = metric.stateless_update_state(this_metric_vars, loss)
            else:
                this_metric_vars = metric.stateless_update_state(
                    this_metric_vars, y, y_pred
                )
            logs = metric.stateless_result(this_metric_vars)
            new_metrics_vars += this_metric_vars

        state = (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            new_metrics_vars,
        )
        return logs, state


class CustomModel2(keras.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")
        self.loss_fn = keras.losses.MeanSquaredError()

    def compute_loss_and_updates(self, trainable_variables, non_trainable_variables, x, y,
                                 training=False):
        y_pred, non_trainable_variables = self.stateless_call(
            trainable_variables,
            non_trainable_variables,
            x,
            training=training,
        )
        loss = self.loss_fn(y, y_pred)
        return loss, (y_pred, non_trainable_variables)

    def train_step(self, state, data):
        (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            metrics_variables,
        ) = state
        x, y = data

        grad_fn = jax.value_and_grad(self.compute_loss_and_updates, has_aux=True)
        (loss, (y_pred, non_trainable_variables)), grads = grad_fn(
            trainable_variables,
            non_trainable_variables,
            x,
            y,
            training=True,
        )
        (
            trainable_variables,
            optimizer_variables,
        ) = self.optimizer.stateless_apply(
            optimizer_variables, grads, trainable_variables
        )

        loss_tracker_vars = metrics_variables[: len(self.loss_tracker.variables)]
        mae_metric_vars = metrics_variables[len(self.loss_tracker.variables) :]

        loss_tracker_vars = self.loss_tracker.stateless_update_state(
            loss_tracker_vars, loss
        )
        mae_metric_vars = self.mae_metric.stateless_update_state(
            mae_metric_vars, y, y_pred
        )

        logs = {}
        logs[self.loss_tracker.name] = self.loss_tracker.stateless_result(
            loss_tracker_vars
        )
        logs[self.mae_metric.name] = self.mae_metric.stateless_result(mae_metric_vars)

        new_metrics_vars = loss_tracker_vars + mae_metric_vars

        state = (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            new_metrics_vars,
        )
        return logs, state

    @property
    def metrics(self):
        return [self.loss_tracker, self.mae_metric]


class CustomModel3(keras.Model):
    def test_step(self, state, data):
        x, y = data
        (
            trainable_variables,
            non_trainable_variables,
            metrics_variables,
        ) = state

        y_pred, non_trainable_variables = self.stateless_call(
            trainable_variables,
            non_trainable_variables,
            x,
            training=False,
        )
        loss = self.compute_loss(x, y, y_pred)

        new_metrics_vars = []
        for metric in self.metrics:
            this_metric_vars = metrics_variables[
                len(new_metrics_vars) : len(new_metrics_vars) + len(metric.variables)
            ]
            if metric.name == "loss":
                this_metric_vars = metric.stateless_update_state(this_metric_vars, loss)
            else:
                this_metric_vars = metric.stateless_update_state(
                    this_metric_vars, y, y_pred
                )
            logs = metric.stateless_result(this_metric_vars)
            new_metrics_vars += this_metric_vars

        state = (
            trainable_variables,
            non_trainable_variables,
            new_metrics_vars,
        )
        return logs, state


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.random((256, 32)), rng.random((256, 1))


def _functional(cls):
    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    return cls(inputs, outputs)


def test_variant_1_compute_loss_and_compiled_metrics(data):
    x, y = data
    model = _functional(CustomModel1)
    reference = _functional(keras.Model)  # the built-in train_step
    reference.set_weights(model.get_weights())
    histories = []
    for m in (model, reference):
        m.compile(optimizer="adam", loss="mse", metrics=["mae"])
        histories.append(m.fit(x, y, epochs=3, shuffle=False, verbose=0).history)
    assert sorted(histories[0]) == ["loss", "mae"]
    assert len(histories[0]["loss"]) == 3
    # The seed's hand-written step is the default step: same logs, same weights.
    for key in ("loss", "mae"):
        np.testing.assert_allclose(histories[0][key], histories[1][key], rtol=1e-5)
    for a, b in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert histories[0]["loss"][-1] < histories[0]["loss"][0]


def test_variant_2_own_metrics_without_compiled_loss(data):
    x, y = data
    model = _functional(CustomModel2)
    model.compile(optimizer="adam")
    history = model.fit(x, y, epochs=5, verbose=0)
    assert list(history.history) == ["loss", "mae"]
    assert history.history["loss"][-1] < history.history["loss"][0]
    # The metrics were written back: their state is the last epoch's.
    assert float(model.loss_tracker.result()) == pytest.approx(history.history["loss"][-1])


def test_variant_3_custom_test_step(data):
    x, y = data
    model = _functional(CustomModel3)
    model.compile(loss="mse", metrics=["mae"])
    result = model.evaluate(x, y, verbose=0)
    y_pred = np.asarray(model.predict(x, verbose=0), np.float64)
    expected = [np.mean((y_pred - y) ** 2), np.mean(np.abs(y_pred - y))]
    np.testing.assert_allclose(result, expected, rtol=1e-5)


def test_metrics_reset_at_each_epoch():
    """With a frozen model (learning rate 0) and data that changes between
    epochs, each epoch's loss is that epoch's alone, not a running mean."""
    rng = np.random.default_rng(1)
    x = rng.random((64, 32)).astype("float32")
    ys = [rng.random((64, 1)).astype("float32") + 3 * e for e in range(2)]

    def batches():
        for epoch in range(2):
            for i in range(0, 64, 32):
                yield x[i:i + 32], ys[epoch][i:i + 32]

    model = _functional(CustomModel1)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.0), loss="mse",
                  metrics=["mae"])
    history = model.fit(batches(), epochs=2, steps_per_epoch=2, verbose=0)
    y_pred = np.asarray(model.predict(x, verbose=0), np.float64)
    for epoch in range(2):
        assert history.history["loss"][epoch] == pytest.approx(
            np.mean((y_pred - ys[epoch]) ** 2), rel=1e-5)
        assert history.history["mae"][epoch] == pytest.approx(
            np.mean(np.abs(y_pred - ys[epoch])), rel=1e-5)
