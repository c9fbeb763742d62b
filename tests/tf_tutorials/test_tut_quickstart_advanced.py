"""tensorflow.org's "quickstart for experts": a subclassed Model, tf.data, metrics,
GradientTape and tf.function, as its reader types them; MNIST replaced by 12x12
images whose class is the bright quadrant (4 classes)."""

import numpy as np

SCRIPT = """
import numpy as np
import tensorflow as tf
print("TensorFlow version:", tf.__version__)
from tensorflow.keras.layers import Dense, Flatten, Conv2D
from tensorflow.keras import Model

rng = np.random.default_rng(1)
y_train = rng.integers(0, 4, 256).astype("int64")
x_train = rng.uniform(0, 60, (256, 12, 12)).astype("uint8")
for i, label in enumerate(y_train):
    r, c = divmod(int(label), 2)
    x_train[i, 6 * r:6 * r + 6, 6 * c:6 * c + 6] += 180
x_test, y_test = x_train[-64:], y_train[-64:]
x_train, y_train = x_train[:192], y_train[:192]
x_train, x_test = x_train / 255.0, x_test / 255.0
x_train = x_train[..., tf.newaxis].astype("float32")
x_test = x_test[..., tf.newaxis].astype("float32")

train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(10000).batch(32)
test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(32)

class MyModel(Model):
  def __init__(self):
    super().__init__()
    self.conv1 = Conv2D(8, 3, activation='relu')
    self.flatten = Flatten()
    self.d1 = Dense(32, activation='relu')
    self.d2 = Dense(4)

  def call(self, x):
    x = self.conv1(x)
    x = self.flatten(x)
    x = self.d1(x)
    return self.d2(x)

tf.random.set_seed(0)
model = MyModel()
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam()
train_loss = tf.keras.metrics.Mean(name='train_loss')
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name='train_accuracy')
test_loss = tf.keras.metrics.Mean(name='test_loss')
test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name='test_accuracy')

@tf.function
def train_step(images, labels):
  with tf.GradientTape() as tape:
    predictions = model(images, training=True)
    loss = loss_object(labels, predictions)
  gradients = tape.gradient(loss, model.trainable_variables)
  optimizer.apply_gradients(zip(gradients, model.trainable_variables))
  train_loss(loss)
  train_accuracy(labels, predictions)

@tf.function
def test_step(images, labels):
  predictions = model(images, training=False)
  t_loss = loss_object(labels, predictions)
  test_loss(t_loss)
  test_accuracy(labels, predictions)

EPOCHS = 5
for epoch in range(EPOCHS):
  train_loss.reset_state()
  train_accuracy.reset_state()
  test_loss.reset_state()
  test_accuracy.reset_state()
  for images, labels in train_ds:
    train_step(images, labels)
  for test_images, test_labels in test_ds:
    test_step(test_images, test_labels)
  print(
    f'Epoch {epoch + 1}, '
    f'Loss: {train_loss.result():0.2f}, '
    f'Accuracy: {train_accuracy.result() * 100:0.2f}, '
    f'Test Loss: {test_loss.result():0.2f}, '
    f'Test Accuracy: {test_accuracy.result() * 100:0.2f}'
  )
logits = model(x_test[:3])
print("logits_shape=", logits.shape.as_list(), "numpy_shape=", logits.numpy().shape)
"""

# TF 2.21.0 (CPU), this script in /work/tfvenv (TF_PYTHON=/work/tfvenv/bin/python runs
# it again), train losses per epoch; loopax printed 1.32 1.13 0.89 0.61 0.35 (another
# random generator draws the initial weights, so only the scale is compared).
TF_TRAIN_LOSS = [1.32, 1.11, 0.87, 0.60, 0.35]
TF_TEST_LOSS_LAST = 0.26


def _epochs(out):
    rows = []
    for line in out.splitlines():
        if line.startswith("Epoch"):
            parts = dict(p.strip().split(": ") for p in line.split(", ")[1:])
            rows.append({k: float(v) for k, v in parts.items()})
    return rows


def test_quickstart_advanced_trains_as_tensorflow(tutorial):
    out = tutorial.run_loopax(SCRIPT)
    rows = _epochs(out)
    assert len(rows) == 5
    np.testing.assert_allclose([r["Loss"] for r in rows], TF_TRAIN_LOSS, atol=0.12)
    assert abs(rows[-1]["Test Loss"] - TF_TEST_LOSS_LAST) < 0.12
    assert rows[-1]["Test Accuracy"] >= 95.0
    assert "logits_shape= [3, 4] numpy_shape= (3, 4)" in out
    reference = tutorial.run_tensorflow(SCRIPT)
    if reference is not None:
        assert _epochs(reference)[-1]["Test Accuracy"] - rows[-1]["Test Accuracy"] <= 5.0
