"""keras.io's "customizing what happens in fit()" (the GAN part), as its reader
types it: a `train_step` that sizes its arrays with `tf.shape(x)[0]`, fitted on
`dataset.take(100)`. A shape's parts stay concrete ints inside the compiled step,
so they can size `tf.zeros`/`tf.random.normal` there (XLA's shapes are static)."""

import numpy as np

SCRIPT = """
import numpy as np
import tensorflow as tf
keras = tf.keras

class Weighted(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1, kernel_initializer="zeros")
        self.loss_tracker = keras.metrics.Mean(name="loss")

    def call(self, x):
        return self.dense(x)

    @property
    def metrics(self):
        return [self.loss_tracker]

    def train_step(self, data):
        x, y = data
        batch_size = tf.shape(x)[0]
        half = batch_size // 2
        weights = tf.concat([tf.ones((half, 1)), 2.0 * tf.ones((batch_size - half, 1))], axis=0)
        noise = 0.0 * tf.random.normal(shape=(batch_size, 1))
        with tf.GradientTape() as tape:
            pred = self(x, training=True) + noise
            loss = tf.reduce_mean(weights * tf.square(pred - y))
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

x = np.arange(16, dtype="float32").reshape(8, 2) / 10
y = (x @ np.array([[1.0], [-2.0]], "float32") + 0.5).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
model = Weighted()
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1))
history = model.fit(dataset.take(100), epochs=1, verbose=0)
print("loss=", "%.6f" % history.history["loss"][-1])
print("kernel=", " ".join("%.6f" % v for v in model.dense.kernel.numpy().ravel()))
print("bias=", "%.6f" % model.dense.bias.numpy()[0])

@tf.function
def noise_like_rows(x):
    return tf.random.normal((tf.shape(x)[0], 3)) * 0.0 + tf.cast(tf.shape(x)[-1], tf.float32)

print("rows=", noise_like_rows(tf.ones((5, 7))).shape[0])
print("value=", float(noise_like_rows(tf.ones((5, 7)))[0, 0]))
"""


def _numpy_reference():
    x = np.arange(16, dtype=np.float64).reshape(8, 2) / 10
    y = x @ np.array([[1.0], [-2.0]]) + 0.5
    w, b = np.zeros((2, 1)), np.zeros(1)
    weights = np.array([[1.0], [1.0], [2.0], [2.0]])
    losses = []
    for i in (0, 4):
        xb, yb = x[i:i + 4], y[i:i + 4]
        err = xb @ w + b - yb
        losses.append(np.mean(weights * err ** 2))
        grad = 2 * weights * err / len(xb)
        w, b = w - 0.1 * xb.T @ grad, b - 0.1 * grad.sum(0)
    return np.mean(losses), w.ravel(), b


def test_gan_style_train_step_sizes_arrays_with_tf_shape(tutorial):
    out = tutorial.run_loopax(SCRIPT)
    loss, kernel, bias = _numpy_reference()
    np.testing.assert_allclose(tutorial.values(out, "loss"), [loss], rtol=1e-5)
    got_kernel = [float(v) for v in out.split("kernel=")[1].split("\n")[0].split()]
    np.testing.assert_allclose(got_kernel, kernel, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tutorial.values(out, "bias"), bias, rtol=1e-5, atol=1e-6)
    assert tutorial.values(out, "rows") == [5.0]
    assert tutorial.values(out, "value") == [7.0]
