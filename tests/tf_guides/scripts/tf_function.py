# The ideas of TensorFlow's "Better performance with tf.function" guide:
# input_signature, retracing, Variables assigned inside, tf.print, tf.cond /
# tf.while_loop / tf.TensorArray inside a compiled function.
import numpy as np

import loopax.tf as tf


@tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.int32)])
def next_collatz(x):
    return tf.where(x % 2 == 0, x // 2, 3 * x + 1)


print("collatz:", next_collatz(tf.constant([1, 2, 3, 4])).numpy())
print("collatz_list:", next_collatz([5, 6, 7]).numpy())
for bad in (tf.constant([1.0, 2.0]), tf.constant([[1, 2]])):
    try:
        next_collatz(bad)
        print("rejected:", 0)
    except TypeError:
        print("rejected:", 1)
try:
    next_collatz(tf.constant([1]), tf.constant([2]))
    print("rejected_extra:", 0)
except TypeError:
    print("rejected_extra:", 1)


class Counter(tf.Module):
    def __init__(self):
        super().__init__()
        self.count = tf.Variable(0)

    @tf.function
    def __call__(self):
        self.count.assign_add(1)
        return self.count


counter = Counter()
print("counter:", [int(counter().numpy()) for _ in range(3)])


@tf.function
def sum_of_squares_below(n):
    def body(i, total):
        return i + 1, total + i * i
    _, total = tf.while_loop(lambda i, total: i < n, body, [tf.constant(0), tf.constant(0)])
    return total


print("while_loop:", sum_of_squares_below(tf.constant(5)).numpy(),
      sum_of_squares_below(tf.constant(10)).numpy())


@tf.function
def relu_or_square(x):
    return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.nn.relu(x), lambda: tf.square(x))


print("cond:", relu_or_square(tf.constant([1.0, -2.0, 4.0])).numpy(),
      relu_or_square(tf.constant([1.0, -2.0, -4.0])).numpy())


@tf.function
def running_means(x):
    n = x.shape[0]
    ta = tf.TensorArray(tf.float32, size=n)
    for i in range(n):
        ta = ta.write(i, tf.reduce_mean(x[: i + 1]))
    return ta.stack()


print("tensor_array:", running_means(tf.constant([2.0, 4.0, 6.0, 8.0])).numpy())


@tf.function
def double(a):
    return a + a


double(tf.constant(1))
double(tf.constant(2))
double(tf.constant(1.5))
print("tracing_count:", double.experimental_get_tracing_count())


@tf.function
def noisy(x):
    tf.print("value", x)
    return x


for i in range(3):
    noisy(tf.constant(i))
print("argmax_default_axis:", tf.argmax(tf.constant(np.array([[1, 5], [7, 2]]))).numpy())
