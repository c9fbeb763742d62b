"""Seed 003 (basic training loops) with loopax names in place of TensorFlow's.

`tf.Variable` → `loopax.Variable`, `tf.Module` → `loopax.Module`,
`tf.GradientTape` → `loopax.GradientTape`, `tf.reduce_mean` / `tf.square` →
`loopax.ops.mean` / `loopax.ops.square`, `tf.keras` → `loopax`.
Every trajectory is checked against full-batch gradient descent in float64.
"""

import numpy as np
import pytest

import loopax

TRUE_W, TRUE_B, NUM_EXAMPLES = 3.0, 2.0, 1000


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=NUM_EXAMPLES).astype(np.float32)
    noise = rng.normal(size=NUM_EXAMPLES).astype(np.float32)
    return x, x * TRUE_W + TRUE_B + noise


def gd_reference(x, y, epochs, lr=0.1, w=5.0, b=0.0):
    """Full-batch gradient descent on mean((w x + b - y)^2), in float64.

    Returns per-epoch (w, b after the update, loss before the update,
    loss after the update)."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    rows = []
    for _ in range(epochs):
        r = w * x + b - y
        loss_before = np.mean(r ** 2)
        w, b = w - lr * np.mean(2 * r * x), b - lr * np.mean(2 * r)
        rows.append((w, b, loss_before, np.mean((w * x + b - y) ** 2)))
    return np.array(rows)


class MyModel(loopax.Module):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = loopax.Variable(5.0)
        self.b = loopax.Variable(0.0)

    def __call__(self, x):
        return self.w * x + self.b


class MyModelKeras(loopax.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = loopax.Variable(5.0)
        self.b = loopax.Variable(0.0)

    def call(self, x):
        return self.w * x + self.b


def loss(target_y, predicted_y):
    return loopax.ops.mean(loopax.ops.square(target_y - predicted_y))


def train(model, x, y, learning_rate):
    with loopax.GradientTape() as t:
        current_loss = loss(y, model(x))
    dw, db = t.gradient(current_loss, [model.w, model.b])
    model.w.assign_sub(learning_rate * dw)
    model.b.assign_sub(learning_rate * db)


def training_loop(model, x, y, epochs=range(10)):
    Ws, bs, losses = [], [], []
    for epoch in epochs:
        train(model, x, y, learning_rate=0.1)
        Ws.append(model.w.numpy())
        bs.append(model.b.numpy())
        losses.append(float(loss(y, model(x))))
    return np.array([Ws, bs, losses]).T


def test_module_with_tape_and_assign_sub_matches_gradient_descent(data):
    x, y = data
    model = MyModel()
    assert model(3.0).numpy() == 15.0
    assert len(model.variables) == 2
    got = training_loop(model, x, y)
    ref = gd_reference(x, y, 10)
    np.testing.assert_allclose(got, ref[:, [0, 1, 3]], atol=1e-4)
    # the tutorial's printed numbers, for a sanity check of the setup
    assert got[-1, 0] < got[0, 0] < 5.0


def test_model_subclass_gives_the_same_trajectory_and_saves(data, tmp_path):
    x, y = data
    module_traj = training_loop(MyModel(), x, y)
    keras_model = MyModelKeras()
    keras_traj = training_loop(keras_model, x, y)
    np.testing.assert_allclose(keras_traj, module_traj, atol=1e-6)

    path = str(tmp_path / "my_checkpoint.weights.safetensors")
    keras_model.save_weights(path)
    fresh = MyModelKeras()
    fresh(x[:2])
    fresh.load_weights(path)
    assert float(fresh.w.numpy()) == float(keras_model.w.numpy())
    assert float(fresh.b.numpy()) == float(keras_model.b.numpy())
    np.testing.assert_array_equal(np.asarray(fresh(x)), np.asarray(keras_model(x)))


@pytest.mark.parametrize("run_eagerly", [False, True])
def test_compile_fit_reports_the_gradient_descent_losses(data, run_eagerly):
    x, y = data
    keras_model = MyModelKeras()
    keras_model.compile(
        run_eagerly=run_eagerly,
        optimizer=loopax.optimizers.SGD(learning_rate=0.1),
        loss=loopax.losses.mean_squared_error,
    )
    history = keras_model.fit(x, y, epochs=10, batch_size=1000, verbose=0)
    ref = gd_reference(x, y, 10)
    # One batch per epoch: the reported loss is the loss before that epoch's update.
    np.testing.assert_allclose(history.history["loss"], ref[:, 2], atol=1e-4)
    assert float(keras_model.w.numpy()) == pytest.approx(ref[-1, 0], abs=1e-4)
    assert float(keras_model.b.numpy()) == pytest.approx(ref[-1, 1], abs=1e-4)
