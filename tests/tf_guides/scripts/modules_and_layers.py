# The ideas of TensorFlow's "Introduction to modules" and "Custom layers"
# guides: Dense modules in a tf.Module, a tf.keras layer subclass, variables
# and submodules listed, a compiled call. Weights are set from NumPy so the
# numbers are known.
import numpy as np

import loopax.tf as tf

rng = np.random.default_rng(1)
W1 = rng.normal(size=(3, 3)).astype(np.float32)
W2 = rng.normal(size=(3, 2)).astype(np.float32)
X = rng.normal(size=(4, 3)).astype(np.float32)


class Dense(tf.Module):
    def __init__(self, w, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(w, name="w")
        self.b = tf.Variable(tf.zeros([w.shape[1]]), name="b")

    def __call__(self, x):
        return tf.nn.relu(tf.matmul(x, self.w) + self.b)


class SequentialModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.dense_1 = Dense(W1)
        self.dense_2 = Dense(W2)

    @tf.function
    def __call__(self, x):
        return self.dense_2(self.dense_1(x))


model = SequentialModule(name="the_model")
print("output:", model(tf.constant(X)).numpy().ravel())
print("counts:", len(model.variables), len(model.trainable_variables), len(model.submodules))
print("shapes:", [int(d) for v in model.variables for d in v.shape])


class MyDenseLayer(tf.keras.layers.Layer):
    def __init__(self, num_outputs):
        super().__init__()
        self.num_outputs = num_outputs

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=[int(input_shape[-1]), self.num_outputs],
                                      initializer="ones", name="kernel")

    def call(self, inputs):
        return tf.matmul(inputs, self.kernel)


layer = MyDenseLayer(2)
print("layer_output:", layer(tf.constant(X)).numpy().ravel())
print("layer_weights:", len(layer.trainable_variables), [int(d) for d in layer.kernel.shape])

# A layer inside a Module trains with an optimizer from tf.keras.
optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
x = tf.constant(X)
target = tf.constant(np.ones((4, 2), np.float32))
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.square(layer(x) - target))
grads = tape.gradient(loss, layer.trainable_variables)
optimizer.apply_gradients(zip(grads, layer.trainable_variables))
print("sgd_loss:", loss.numpy())
print("sgd_kernel:", layer.kernel.numpy().ravel())
