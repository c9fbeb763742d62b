# The ideas of TensorFlow's "Basic training loops" guide: a linear model in a
# tf.Module, an MSE loss, gradient descent by hand with GradientTape and
# assign_sub. Runs unchanged with `import tensorflow as tf`.
import numpy as np

import loopax.tf as tf

TRUE_W, TRUE_B = 3.0, 2.0
NUM_EXAMPLES = 201
rng = np.random.default_rng(0)
x = tf.constant(np.linspace(-2, 2, NUM_EXAMPLES), dtype=tf.float32)
noise = tf.constant(rng.normal(size=NUM_EXAMPLES), dtype=tf.float32)
y = x * TRUE_W + TRUE_B + noise


class MyModel(tf.Module):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def __call__(self, x):
        return self.w * x + self.b


def loss(target_y, predicted_y):
    return tf.reduce_mean(tf.square(target_y - predicted_y))


def train(model, x, y, learning_rate):
    with tf.GradientTape() as t:
        current_loss = loss(y, model(x))
    dw, db = t.gradient(current_loss, [model.w, model.b])
    model.w.assign_sub(learning_rate * dw)
    model.b.assign_sub(learning_rate * db)


model = MyModel()
print("variables:", len(model.variables), len(model.trainable_variables))
print("initial_loss:", loss(y, model(x)).numpy())
for epoch in range(10):
    train(model, x, y, learning_rate=0.1)
    print("epoch:", epoch, model.w.numpy(), model.b.numpy(), loss(y, model(x)).numpy())


@tf.function
def train_step(x, y):
    with tf.GradientTape() as t:
        current_loss = loss(y, model(x))
    grads = t.gradient(current_loss, model.trainable_variables)
    for v, g in zip(model.trainable_variables, grads):
        v.assign_sub(0.1 * g)
    return current_loss


for step in range(5):
    step_loss = train_step(x, y)
    print("compiled:", step, model.w.numpy(), model.b.numpy(), step_loss.numpy())
