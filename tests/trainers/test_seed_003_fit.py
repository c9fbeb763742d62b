"""Seed 003's Keras part: a linear model `w*x + b` trained by compile/fit with
SGD(0.1) and MSE on one batch of 1,000 points. Each epoch's reported loss is
the loss before that epoch's update, which is full-batch gradient descent's
recurrence (computed here in float64)."""

import numpy as np

import loopax as keras


class MyModelKeras(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = keras.Variable(5.0)
        self.b = keras.Variable(0.0)

    def call(self, x):
        return self.w * x + self.b


def gradient_descent(x, y, w, b, lr, epochs):
    losses = []
    for _ in range(epochs):
        err = w * x + b - y
        losses.append(np.mean(err ** 2))
        w, b = w - lr * np.mean(2 * err * x), b - lr * np.mean(2 * err)
    return losses, w, b


def test_fit_matches_full_batch_gradient_descent():
    rng = np.random.default_rng(0)
    x = rng.normal(size=1000).astype(np.float32)
    y = (x * 3.0 + 2.0 + rng.normal(size=1000)).astype(np.float32)

    model = MyModelKeras()
    model.compile(run_eagerly=False, optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss=keras.losses.mean_squared_error)
    history = model.fit(x, y, epochs=10, batch_size=1000, verbose=0)

    losses, w, b = gradient_descent(x.astype(np.float64), y.astype(np.float64), 5.0, 0.0,
                                    0.1, 10)
    np.testing.assert_allclose(history.history["loss"], losses, atol=1e-4, rtol=0)
    assert abs(float(model.w.numpy()) - w) < 1e-4
    assert abs(float(model.b.numpy()) - b) < 1e-4
