"""Seed 001 (GradientTape, tf.function, custom_gradient) with loopax names.

`tf.constant` → `loopax.constant`, `tf.GradientTape` → `loopax.GradientTape`,
`tf.function` → `loopax.function`, `tf.print` → `loopax.print`,
`tf.custom_gradient` → `loopax.custom_gradient`, `tf.keras` → `loopax`.
The CustomModel-under-fit part lives in tests/trainers/test_tf_style_steps.py.
"""

import numpy as np
import pytest

import loopax
import loopax as keras


def test_watched_constant():
    x = loopax.constant(3.0)
    with loopax.GradientTape() as g:
        g.watch(x)
        y = x * x
    dy_dx = g.gradient(y, x)
    assert float(dy_dx) == 6.0


def test_nested_tapes_second_derivative():
    x = loopax.constant(3.0)
    with loopax.GradientTape() as g:
        g.watch(x)
        with loopax.GradientTape() as gg:
            gg.watch(x)
            y = x * x * x
        dy_dx = gg.gradient(y, x)
    d2y_dx2 = g.gradient(dy_dx, x)
    assert float(dy_dx) == 27.0 and float(d2y_dx2) == 18.0


class NewLayer(keras.layers.Layer):
    """The seed uses an undefined `NewLayer(1)` on (2, 2, 1) inputs: a dense
    layer over the flattened input is the natural reading."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight((4, self.units), initializer="glorot_uniform", name="w")
        self.b = self.add_weight((self.units,), initializer="zeros", name="b")

    def call(self, inputs):
        flat = loopax.ops.reshape(inputs, (-1, 4))
        return loopax.ops.matmul(flat, self.w) + self.b


def test_compiled_train_step_matches_hand_written_sgd(capfd):
    def new_model():
        input = keras.layers.Input((2, 2, 1))
        n1 = NewLayer(1)(input)
        output = keras.Model(inputs=input, outputs=n1)
        return output

    model = new_model()
    loss_function = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.SGD(learning_rate=0.01)
    train_loss = keras.metrics.Mean()

    @loopax.function
    def train_step(images, labels):
        with loopax.GradientTape() as tape:
            predictions = model(images)
            loopax.print("pred:", predictions, "\n")
            loss = loss_function(labels, predictions)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_loss(loss)

    rng = np.random.default_rng(0)
    ex = rng.normal(size=(5, 8, 2, 2, 1)).astype(np.float32)  # 5 batches of 8 images
    sy = rng.normal(size=(5, 8, 1)).astype(np.float32)

    w = np.asarray(model.trainable_variables[0].numpy(), np.float64)
    b = np.zeros(1)
    losses = []
    EPOCHS = 4
    for epoch in range(EPOCHS):
        for images, labels in zip(ex, sy):
            train_step(images, labels)
            # The same step in float64 NumPy: MSE gradient of a linear map.
            flat = images.reshape(-1, 4).astype(np.float64)
            r = flat @ w + b - labels
            losses.append(np.mean(r ** 2))
            w -= 0.01 * flat.T @ (2 * r) / r.size
            b -= 0.01 * np.sum(2 * r, 0) / r.size
    np.testing.assert_allclose(model.trainable_variables[0].numpy(), w, atol=1e-5)
    np.testing.assert_allclose(model.trainable_variables[1].numpy(), b, atol=1e-5)
    assert float(train_loss.result()) == pytest.approx(np.mean(losses), rel=1e-4)
    assert int(optimizer.iterations.numpy()) == 20
    # loopax.print runs on every call (it is part of the compiled program).
    assert capfd.readouterr().out.count("pred:") == 20


def test_custom_gradient_bar():
    @loopax.custom_gradient
    def bar(x, y):
        def grad(upstream):
            dz_dx = y
            dz_dy = x
            return upstream * dz_dx, upstream * dz_dy
        z = x * y
        return z, grad

    x = loopax.constant([2.0, 5.0], dtype="float32")
    y = loopax.constant([3.0, 8.0], dtype="float32")
    with loopax.GradientTape(persistent=True) as tape:
        tape.watch(x)
        tape.watch(y)
        z = bar(x, y)
    np.testing.assert_array_equal(np.asarray(z), [6.0, 40.0])
    np.testing.assert_array_equal(np.asarray(tape.gradient(z, x)), [3.0, 8.0])
    np.testing.assert_array_equal(np.asarray(tape.gradient(z, y)), [2.0, 5.0])
