"""tensorflow.org's "quickstart for beginners", as its reader types it: MNIST replaced
by 28x28 arrays whose class is the brightest of ten horizontal bands (learnable)."""

import numpy as np

SCRIPT = """
import numpy as np
import tensorflow as tf
print("TensorFlow version:", tf.__version__)

rng = np.random.default_rng(0)
y_train = rng.integers(0, 10, 600)
x_train = rng.integers(0, 80, (600, 28, 28)).astype("uint8")
for i, label in enumerate(y_train):
    x_train[i, 2 * label:2 * label + 3] += 170
x_test, y_test = x_train[-100:], y_train[-100:]
x_train, y_train = x_train[:500], y_train[:500]
x_train, x_test = x_train / 255.0, x_test / 255.0

tf.random.set_seed(0)
model = tf.keras.models.Sequential([
  tf.keras.layers.Flatten(input_shape=(28, 28)),
  tf.keras.layers.Dense(128, activation='relu'),
  tf.keras.layers.Dropout(0.2),
  tf.keras.layers.Dense(10)
])
predictions = model(x_train[:1]).numpy()
print("predictions_shape=", predictions.shape)
probabilities = tf.nn.softmax(predictions).numpy()
print("probability_sum=%.4f" % probabilities.sum())
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
print("initial_loss=%.4f" % loss_fn(y_train[:1], predictions).numpy())
print("initial_loss_check=%.4f" % -np.log(probabilities[0, y_train[0]]))
model.compile(optimizer='adam', loss=loss_fn, metrics=['accuracy'])
model.fit(x_train, y_train, epochs=5, verbose=0)
loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
print("test_accuracy=%.4f" % accuracy)
probability_model = tf.keras.Sequential([model, tf.keras.layers.Softmax()])
top = probability_model(x_test[:5])
print("top_sums=", " ".join("%.4f" % s for s in np.sum(top, axis=1)))
print("max_percent=%.1f" % (100 * np.max(top[0])))
"""

# TF 2.21.0 (CPU, /work/tfvenv, TF_PYTHON=/work/tfvenv/bin/python): test_accuracy=1.0000;
# the initial loss is that of near-uniform logits, 2.0-2.6 (log 10 = 2.30).
TF_TEST_ACCURACY = 1.0


def test_quickstart_beginner_runs_with_tf_numbers(tutorial):
    out = tutorial.run_loopax(SCRIPT)
    assert "TensorFlow version: 2.21.0+loopax" in out
    (loss,), (check,) = (
        tutorial.values(out, "initial_loss"),
        tutorial.values(out, "initial_loss_check"),
    )
    np.testing.assert_allclose(loss, check, rtol=1e-3)     # loss_fn on .numpy() logits
    assert 1.8 < loss < 2.8
    assert tutorial.values(out, "probability_sum") == [1.0]
    assert tutorial.values(out, "test_accuracy")[0] >= TF_TEST_ACCURACY - 0.05
    assert "top_sums= 1.0000 1.0000 1.0000 1.0000 1.0000" in out
    assert 10 < tutorial.values(out, "max_percent")[0] <= 100
    reference = tutorial.run_tensorflow(SCRIPT)
    if reference is not None:
        assert abs(tutorial.values(reference, "test_accuracy")[0]
                   - tutorial.values(out, "test_accuracy")[0]) <= 0.05
