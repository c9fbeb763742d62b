"""Seed 000 (a training loop from scratch on JAX) run with `import loopax as keras`.

The tutorial's code is kept as written; only the data source changes (the
shipped 8×8 digits scaled to MNIST's 784 features instead of a download, and
NumPy batches instead of tf.data).
"""

import jax
import numpy as np
import pytest

import loopax as keras


@pytest.fixture(scope="module")
def mnist_like():
    (x, y), _ = keras.datasets.digits.load_data()
    # 8×8 → 24×24 by repeating pixels, padded to 28×28 = 784 features.
    x = np.kron(np.asarray(x, np.float32).reshape(-1, 8, 8), np.ones((3, 3), np.float32))
    x = np.pad(x, ((0, 0), (2, 2), (2, 2))).reshape(-1, 784) / 16.0
    y = keras.utils.to_categorical(y)
    return x[:640], y[:640], x[640:960], y[640:960]


def batches(x, y, batch_size=32):
    for i in range(0, len(x) - batch_size + 1, batch_size):
        yield x[i:i + batch_size], y[i:i + batch_size]


def get_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x1 = keras.layers.Dense(64, activation="relu")(inputs)
    x2 = keras.layers.Dense(64, activation="relu")(x1)
    outputs = keras.layers.Dense(10, name="predictions")(x2)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def test_block_1_jitted_stateless_loop_then_assign_back(mnist_like):
    x_train, y_train, _, _ = mnist_like
    model = get_model()
    loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True)
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)

    def compute_loss_and_updates(trainable_variables, non_trainable_variables, x, y):
        y_pred, non_trainable_variables = model.stateless_call(
            trainable_variables, non_trainable_variables, x
        )
        loss = loss_fn(y, y_pred)
        return loss, non_trainable_variables

    grad_fn = jax.value_and_grad(compute_loss_and_updates, has_aux=True)

    @jax.jit
    def train_step(state, data):
        trainable_variables, non_trainable_variables, optimizer_variables = state
        x, y = data
        (loss, non_trainable_variables), grads = grad_fn(
            trainable_variables, non_trainable_variables, x, y
        )
        trainable_variables, optimizer_variables = optimizer.stateless_apply(
            optimizer_variables, grads, trainable_variables
        )
        return loss, (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
        )

    optimizer.build(model.trainable_variables)
    trainable_variables = model.trainable_variables
    non_trainable_variables = model.non_trainable_variables
    optimizer_variables = optimizer.variables
    # The Variables themselves go into the jitted step (they are pytrees).
    state = trainable_variables, non_trainable_variables, optimizer_variables

    losses = []
    for epoch in range(3):
        for step, data in enumerate(batches(x_train, y_train)):
            loss, state = train_step(state, data)
            losses.append(float(loss))
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:20])

    before = model(x_train[:8])
    trainable_variables, non_trainable_variables, optimizer_variables = state
    for variable, value in zip(model.trainable_variables, trainable_variables):
        variable.assign(value)
    for variable, value in zip(model.non_trainable_variables, non_trainable_variables):
        variable.assign(value)
    after = model(x_train[:8])
    assert not np.allclose(before, after)
    # After assigning back, the model's own call equals the stateless call.
    stateless, _ = model.stateless_call(trainable_variables, non_trainable_variables, x_train[:8])
    np.testing.assert_allclose(np.asarray(after), np.asarray(stateless), rtol=1e-6, atol=1e-6)


def test_block_2_metrics_stateless_equals_hand_count(mnist_like):
    x_train, y_train, x_val, y_val = mnist_like
    model = get_model()
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True)
    train_acc_metric = keras.metrics.CategoricalAccuracy()
    val_acc_metric = keras.metrics.CategoricalAccuracy()

    def compute_loss_and_updates(
        trainable_variables, non_trainable_variables, metric_variables, x, y
    ):
        y_pred, non_trainable_variables = model.stateless_call(
            trainable_variables, non_trainable_variables, x
        )
        loss = loss_fn(y, y_pred)
        metric_variables = train_acc_metric.stateless_update_state(
            metric_variables, y, y_pred
        )
        return loss, (non_trainable_variables, metric_variables)

    grad_fn = jax.value_and_grad(compute_loss_and_updates, has_aux=True)

    @jax.jit
    def train_step(state, data):
        (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            metric_variables,
        ) = state
        x, y = data
        (loss, (non_trainable_variables, metric_variables)), grads = grad_fn(
            trainable_variables, non_trainable_variables, metric_variables, x, y
        )
        trainable_variables, optimizer_variables = optimizer.stateless_apply(
            optimizer_variables, grads, trainable_variables
        )
        return loss, (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            metric_variables,
        )

    @jax.jit
    def eval_step(state, data):
        trainable_variables, non_trainable_variables, metric_variables = state
        x, y = data
        y_pred, non_trainable_variables = model.stateless_call(
            trainable_variables, non_trainable_variables, x
        )
        loss = loss_fn(y, y_pred)
        metric_variables = val_acc_metric.stateless_update_state(
            metric_variables, y, y_pred
        )
        return loss, (
            trainable_variables,
            non_trainable_variables,
            metric_variables,
        )

    optimizer.build(model.trainable_variables)
    state = (
        model.trainable_variables,
        model.non_trainable_variables,
        optimizer.variables,
        train_acc_metric.variables,
    )
    for step, data in enumerate(batches(x_train, y_train)):
        loss, state = train_step(state, data)
    _, _, _, metric_variables = state
    for variable, value in zip(train_acc_metric.variables, metric_variables):
        variable.assign(value)
    assert 0.0 < float(train_acc_metric.result()) <= 1.0

    trainable_variables, non_trainable_variables, optimizer_variables, _ = state
    state = trainable_variables, non_trainable_variables, val_acc_metric.variables
    for step, data in enumerate(batches(x_val, y_val)):
        loss, state = eval_step(state, data)
    _, _, metric_variables = state
    for variable, value in zip(val_acc_metric.variables, metric_variables):
        variable.assign(value)

    # A hand count of correct predictions with the trained weights.
    logits, _ = model.stateless_call(trainable_variables, non_trainable_variables, x_val[:320])
    hand = np.mean(np.argmax(np.asarray(logits), -1) == np.argmax(y_val[:320], -1))
    assert float(val_acc_metric.result()) == pytest.approx(hand, abs=1e-6)
    assert hand > 0.5  # it learned something


def test_block_3_add_loss_through_return_losses(mnist_like):
    x_train, y_train, _, _ = mnist_like

    class ActivityRegularizationLayer(keras.layers.Layer):
        def call(self, inputs):
            self.add_loss(1e-2 * jax.numpy.sum(inputs))
            return inputs

    inputs = keras.Input(shape=(784,), name="digits")
    x = keras.layers.Dense(64, activation="relu")(inputs)
    x = ActivityRegularizationLayer()(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    outputs = keras.layers.Dense(10, name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True)
    train_acc_metric = keras.metrics.CategoricalAccuracy()

    def compute_loss_and_updates(
        trainable_variables, non_trainable_variables, metric_variables, x, y
    ):
        y_pred, non_trainable_variables, losses = model.stateless_call(
            trainable_variables, non_trainable_variables, x, return_losses=True
        )
        loss = loss_fn(y, y_pred)
        if losses:
            loss += jax.numpy.sum(losses)
        metric_variables = train_acc_metric.stateless_update_state(
            metric_variables, y, y_pred
        )
        return loss, non_trainable_variables, metric_variables

    # The tutorial returns a 3-tuple, which jax.value_and_grad(has_aux=True)
    # does not accept; we check the function's numbers directly instead.
    tv = [v.value for v in model.trainable_variables]
    ntv = [v.value for v in model.non_trainable_variables]
    mv = [v.value for v in train_acc_metric.variables]
    x, y = x_train[:32], y_train[:32]
    loss, _, _ = jax.jit(compute_loss_and_updates)(tv, ntv, mv, x, y)

    w1, b1, w2, b2, w3, b3 = [np.asarray(v, np.float64) for v in tv]
    h1 = np.maximum(x @ w1 + b1, 0)
    h2 = np.maximum(h1 @ w2 + b2, 0)
    logits = h2 @ w3 + b3
    logp = logits - logits.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    expected = -np.mean(np.sum(y * logp, -1)) + 1e-2 * h1.sum()
    assert float(loss) == pytest.approx(expected, rel=1e-4)

    grads = jax.grad(lambda t: compute_loss_and_updates(t, ntv, mv, x, y)[0])(tv)
    assert len(grads) == 6 and float(np.abs(np.asarray(grads[0])).sum()) > 0
