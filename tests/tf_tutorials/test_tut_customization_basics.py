"""tensorflow.org's "customization basics" (tensors and operations), as its reader
types it. The printed values are TensorFlow 2.21's (run in /work/tfvenv)."""

SCRIPT = """
import numpy as np
import tensorflow as tf

print(tf.math.add(1, 2).numpy())
print(tf.math.add([1, 2], [3, 4]).numpy())
print(tf.math.square(5).numpy())
print(tf.math.reduce_sum([1, 2, 3]).numpy())
print((tf.math.square(2) + tf.math.square(3)).numpy())

x = tf.linalg.matmul([[1]], [[2, 3]])
print(x.numpy())
print(x.shape)
print(x.dtype)

ndarray = np.ones([3, 3])
tensor = tf.math.multiply(ndarray, 42)
print(np.add(tensor, 1))
print(type(np.add(tensor, 1)).__name__)
print(tensor.numpy().dtype)

x = tf.random.uniform([3, 3])
print(x.device.endswith('CPU:0') or x.device.endswith('GPU:0'))
with tf.device("CPU:0"):
  x = tf.random.uniform([10, 10])
  assert x.device.endswith("CPU:0")
print(len(tf.config.list_physical_devices("CPU")) >= 1)

ds_tensors = tf.data.Dataset.from_tensor_slices([1, 2, 3, 4, 5, 6])
ds_tensors = ds_tensors.map(tf.math.square).batch(2)
for x in ds_tensors:
  print(x.numpy())
"""

# What TF 2.21.0 prints for SCRIPT (the `shuffle(2)` of the tutorial left out: its
# order is random), recorded with /work/tfvenv/bin/python.
TF_OUTPUT = """3
[4 6]
25
6
13
[[2 3]]
(1, 2)
<dtype: 'int32'>
[[43. 43. 43.]
 [43. 43. 43.]
 [43. 43. 43.]]
ndarray
float64
True
True
[1 4]
[ 9 16]
[25 36]
"""


def test_customization_basics_prints_what_tensorflow_prints(tutorial):
    out = tutorial.run_loopax(SCRIPT)
    expected = TF_OUTPUT.splitlines()
    got = out.splitlines()
    # Two lines differ by design: loopax's dtypes are NumPy's (`int32`, not
    # `<dtype: 'int32'>`), and float64 NumPy input becomes float32 (loopax's default
    # float, as JAX without x64) where TensorFlow keeps float64.
    assert got[7] == "int32" and expected[7] == "<dtype: 'int32'>"
    assert got[12] == "float32" and expected[12] == "float64"
    assert [g for i, g in enumerate(got) if i not in (7, 12)] == \
        [e for i, e in enumerate(expected) if i not in (7, 12)]
    reference = tutorial.run_tensorflow(SCRIPT)
    if reference is not None:
        assert reference == TF_OUTPUT
