# The tf.function guide's AutoGraph examples, written the way the guide runs
# them (our own code): Python control flow on tensors inside tf.function.
# Run under loopax.tf by tests/tf_tutorials/test_tut_tf_function.py and, where
# TensorFlow is installed, under `import tensorflow as tf` for the same output.
import numpy as np

import loopax.tf as tf


@tf.function
def fizzbuzz(n):
    for i in tf.range(1, n + 1):
        print("Tracing for loop")
        if i % 15 == 0:
            print("Tracing fizzbuzz branch")
            tf.print("fizzbuzz")
        elif i % 3 == 0:
            print("Tracing fizz branch")
            tf.print("fizz")
        elif i % 5 == 0:
            print("Tracing buzz branch")
            tf.print("buzz")
        else:
            print("Tracing default branch")
            tf.print(i)


fizzbuzz(tf.constant(5))
fizzbuzz(tf.constant(16))


def train_one_step():
    pass


@tf.function
def train(num_steps):
    print("Tracing with num_steps =", num_steps)
    tf.print("Executing with num_steps =", num_steps)
    for _ in tf.range(num_steps):
        train_one_step()


print("Retracing occurs for different Python arguments.")
train(num_steps=10)
train(num_steps=20)
print("Traces are reused for Tensor arguments.")
train(num_steps=tf.constant(10))
train(num_steps=tf.constant(20))
print("train traced:", train.experimental_get_tracing_count())


@tf.function
def shrink(x):
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
    return x


print("shrink:", np.round(shrink(tf.constant([0.5, 0.8, 1.2])).numpy(), 5))


@tf.function
def sum_even(items):
    s = 0
    for c in items:
        if c % 2 > 0:
            continue
        s += c
    return s


print("sum_even:", sum_even(tf.constant([10, 12, 15, 20])).numpy())


@tf.function
def first_above(x, limit):
    found = tf.constant(-1)
    for i in tf.range(tf.shape(x)[0]):
        if x[i] > limit:
            found = i
            break
    return found


print("first_above:", first_above(tf.constant([1.0, 3.0, 5.0]), 2.0).numpy(),
      first_above(tf.constant([1.0, 3.0, 5.0]), 9.0).numpy())


@tf.function
def signed_sqrt(x):
    if x < 0:
        return -tf.sqrt(-x)
    return tf.sqrt(x)


print("signed_sqrt:", signed_sqrt(tf.constant(-4.0)).numpy(),
      signed_sqrt(tf.constant(9.0)).numpy())


@tf.function
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


print("collatz_steps:", collatz_steps(tf.constant(6)).numpy(),
      collatz_steps(tf.constant(27)).numpy())


@tf.function
def train_on(dataset):
    loss = tf.constant(0)
    for x, y in dataset:
        loss += tf.abs(y - x)
    return loss


print("train_on:", train_on([(1, 1), (2, 5), (7, 3)]).numpy())


def rnn_step(inp, state):
    return inp + state


@tf.function
def dynamic_rnn(rnn_step, input_data, initial_state):
    input_data = tf.transpose(input_data, [1, 0, 2])
    max_seq_len = input_data.shape[0]
    states = tf.TensorArray(tf.float32, size=max_seq_len)
    state = initial_state
    for i in tf.range(max_seq_len):
        state = rnn_step(input_data[i], state)
        states = states.write(i, state)
    return tf.transpose(states.stack(), [1, 0, 2])


rnn_out = dynamic_rnn(rnn_step, tf.reshape(tf.range(12, dtype=tf.float32), [2, 3, 2]),
                      tf.zeros([2, 2]))
print("dynamic_rnn:", rnn_out.numpy().reshape(-1))

counter = tf.Variable(0.0)


@tf.function
def count_even(n):
    for i in tf.range(n):
        if i % 2 == 0:
            counter.assign_add(tf.cast(i, tf.float32))
    return counter + 0.0


print("count_even:", count_even(tf.constant(5)).numpy(), counter.numpy())


@tf.function
def clipped(x):
    return x if x < 3.0 else 3.0 + 0.1 * (x - 3.0)


print("clipped:", clipped(tf.constant(2.0)).numpy(), np.round(clipped(tf.constant(5.0)).numpy(), 5))
