"""`print(t)` and `repr(t)` of eager Tensors and tf.Variables under `import loopax.tf as
tf`, compared with what TensorFlow 2.21 prints (recorded below); without loopax.tf, the
Keras-on-JAX face keeps loopax's own text."""

import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import loopax.tf as tf

# (value, str, repr) as TensorFlow 2.21.0 (NumPy 2.4) prints them.
TF_TEXTS = [
    (lambda: tf.constant([1, 2]),
     "tf.Tensor([1 2], shape=(2,), dtype=int32)",
     "<tf.Tensor: shape=(2,), dtype=int32, numpy=array([1, 2], dtype=int32)>"),
    (lambda: tf.constant(3.5),
     "tf.Tensor(3.5, shape=(), dtype=float32)",
     "<tf.Tensor: shape=(), dtype=float32, numpy=3.5>"),
    (lambda: tf.constant([[1.5, 2.], [3, 4]]),
     "tf.Tensor(\n[[1.5 2. ]\n [3.  4. ]], shape=(2, 2), dtype=float32)",
     "<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\narray([[1.5, 2. ],\n"
     "       [3. , 4. ]], dtype=float32)>"),
    (lambda: tf.constant(True),
     "tf.Tensor(True, shape=(), dtype=bool)",
     "<tf.Tensor: shape=(), dtype=bool, numpy=True>"),
    (lambda: tf.constant("a"),
     "tf.Tensor(b'a', shape=(), dtype=string)",
     "<tf.Tensor: shape=(), dtype=string, numpy=b'a'>"),
    (lambda: tf.constant(["a", "bc"]),
     "tf.Tensor([b'a' b'bc'], shape=(2,), dtype=string)",
     "<tf.Tensor: shape=(2,), dtype=string, numpy=array([b'a', b'bc'], dtype=object)>"),
    (lambda: tf.range(2000),
     "tf.Tensor([   0    1    2 ... 1997 1998 1999], shape=(2000,), dtype=int32)",
     "<tf.Tensor: shape=(2000,), dtype=int32, numpy=\narray([   0,    1,    2, ..., "
     "1997, 1998, 1999],\n      shape=(2000,), dtype=int32)>"),
    (lambda: tf.zeros((0, 3)),
     "tf.Tensor([], shape=(0, 3), dtype=float32)",
     "<tf.Tensor: shape=(0, 3), dtype=float32, numpy=array([], shape=(0, 3), dtype=float32)>"),
    (lambda: tf.constant(1e-8),
     "tf.Tensor(1e-08, shape=(), dtype=float32)",
     "<tf.Tensor: shape=(), dtype=float32, numpy=9.99999993922529e-09>"),
    (lambda: tf.constant([1e6, 1e-3]),
     "tf.Tensor([1.e+06 1.e-03], shape=(2,), dtype=float32)",
     "<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1.e+06, 1.e-03], dtype=float32)>"),
    (lambda: tf.constant([1., 2.], dtype=tf.float16),
     "tf.Tensor([1. 2.], shape=(2,), dtype=float16)",
     "<tf.Tensor: shape=(2,), dtype=float16, numpy=array([1., 2.], dtype=float16)>"),
]


TF_TEXT_IDS = ["int_vector", "float_scalar", "matrix", "bool", "string", "strings",
               "long_summarized", "empty", "small_float", "wide_floats", "float16"]


@pytest.mark.parametrize("make,text,representation", TF_TEXTS, ids=TF_TEXT_IDS)
def test_eager_tensor_prints_as_tensorflow(make, text, representation):
    value = make()
    assert str(value) == text
    assert repr(value) == representation


def test_results_of_ops_layers_tapes_and_datasets_print_as_tensorflow():
    x = tf.Variable([1., 2.])
    assert repr(x + 1) == "<tf.Tensor: shape=(2,), dtype=float32, numpy=" \
                          "array([2., 3.], dtype=float32)>"
    assert repr(x.assign_add([1., 1.])) == "<tf.Tensor: shape=(2,), dtype=float32, " \
                                           "numpy=array([2., 3.], dtype=float32)>"
    model = tf.keras.Sequential([tf.keras.Input((3,)),
                                 tf.keras.layers.Dense(2, kernel_initializer="ones")])
    y = tf.reduce_sum(model(np.ones((1, 3))), axis=0)
    assert str(y) == "tf.Tensor([3. 3.], shape=(2,), dtype=float32)"
    with tf.GradientTape() as tape:
        s = tf.constant(3.0)
        tape.watch(s)
        z = s * s
    assert str(tape.gradient(z, s)) == "tf.Tensor(6.0, shape=(), dtype=float32)"
    elements = [str(e) for e in tf.data.Dataset.range(2)]
    # TensorFlow: int64 (loopax's integers are int32, as JAX's without x64).
    assert elements == ["tf.Tensor(0, shape=(), dtype=int32)",
                        "tf.Tensor(1, shape=(), dtype=int32)"]
    assert str([tf.constant(1)]) == "[<tf.Tensor: shape=(), dtype=int32, numpy=1>]"


def test_format_of_a_tensor_is_numpy_format_as_in_tensorflow():
    t = tf.constant(2.5)
    assert f"{t}" == "2.5"
    assert f"{t:.2f}" == "2.50"
    assert f"{tf.constant([1, 2])}" == "[1 2]"


@pytest.mark.parametrize("make,representation", [
    (lambda: tf.Variable([1., 2.], name="v"),
     "<tf.Variable 'v:0' shape=(2,) dtype=float32, numpy=array([1., 2.], dtype=float32)>"),
    (lambda: tf.Variable(3),
     "<tf.Variable 'Variable:0' shape=() dtype=int32, numpy=3>"),
    (lambda: tf.Variable([[1, 2], [3, 4]], name="w"),
     "<tf.Variable 'w:0' shape=(2, 2) dtype=int32, numpy=\narray([[1, 2],\n"
     "       [3, 4]], dtype=int32)>"),
], ids=["named_vector", "unnamed_int_scalar", "matrix"])
def test_variable_prints_as_tensorflow(make, representation):
    variable = make()
    assert repr(variable) == representation
    assert str(variable) == representation


def test_variable_in_a_name_scope_is_named_with_it():
    with tf.name_scope("scope"):
        v = tf.Variable(1.0, name="v")
    assert repr(v) == "<tf.Variable 'scope/v:0' shape=() dtype=float32, numpy=1.0>"


def test_tf_variable_prints_as_tensorflow_and_works_as_a_loopax_variable():
    v = tf.Variable([1., 2.], name="v")
    assert isinstance(v, tf.Variable) and isinstance(v, tf.keras.Variable)
    assert [np.asarray(leaf).tolist() for leaf in jax.tree_util.tree_leaves(v)] == [[1., 2.]]

    @tf.function
    def double():
        v.assign(v * 2)
        return v + 0

    np.testing.assert_array_equal(double().numpy(), [2., 4.])
    assert repr(v) == ("<tf.Variable 'v:0' shape=(2,) dtype=float32, "
                       "numpy=array([2., 4.], dtype=float32)>")


def test_layer_weights_keep_keras_text_as_in_tensorflow_2_21():
    # tf.keras is Keras 3 in TensorFlow 2.21: a layer's weight prints as
    # `<Variable path=sequential/dense/bias, shape=(2,), dtype=float32, value=[0. 0.]>`.
    layer = tf.keras.layers.Dense(2)
    layer.build((None, 3))
    assert repr(layer.bias).startswith("<Variable path=dense")
    assert "value=[0. 0.]" in repr(layer.bias)


KERAS_ON_JAX = """
import numpy as np
import loopax as keras
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="ones")])
y = model(np.ones((1, 3)))
c = keras.constant([1, 2])
for value in (y, c):
    print(repr(value))
    print(str(value))
    print(f"{value}")
print(repr(model.layers[0].bias))
"""


def test_layer_and_metric_outputs_print_as_tensorflow_beside_loopax_tf():
    # A program that imported loopax.tf is a TensorFlow program: tf.keras layer
    # outputs and metric results are tf.Tensors there (TensorFlow 2.21 prints the
    # text below), while loopax's own constructors keep loopax's text.
    import loopax as keras
    layer = keras.layers.Dense(2, kernel_initializer="ones")
    y = layer(np.ones((1, 3)))
    assert str(y) == "tf.Tensor([[3. 3.]], shape=(1, 2), dtype=float32)"
    assert repr(y) == ("<tf.Tensor: shape=(1, 2), dtype=float32, numpy=array([[3., 3.]], "
                       "dtype=float32)>")
    assert f"{y}" == f"{np.array([[3., 3.]], np.float32)}"
    metric = keras.metrics.Mean()
    metric.update_state([1.0, 2.0])
    assert str(metric.result()) == "tf.Tensor(1.5, shape=(), dtype=float32)"
    assert type(metric.result().numpy()) is np.float32   # TensorFlow's numpy() of a scalar
    assert str(keras.constant([1, 2])) == "Tensor([1 2], shape=(2,), dtype=int32)"
    assert str(keras.ops.add(keras.constant([1, 2]), 1)) == \
        "Tensor([2 3], shape=(2,), dtype=int32)"
    # still arrays to JAX and NumPy
    np.testing.assert_array_equal(jax.numpy.add(y, 1), [[4., 4.]])
    assert np.max(y) == 3.0


def test_keras_on_jax_prints_are_unchanged_without_loopax_tf():
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(KERAS_ON_JAX)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    y_text = f"Tensor({np.array([[3., 3.]], np.float32)}, shape=(1, 2), dtype=float32)"
    c_text = f"Tensor({np.array([1, 2], np.int32)}, shape=(2,), dtype=int32)"
    assert out[:6] == [y_text] * 3 + [c_text] * 3
    assert out[6] == ("<Variable path=sequential/dense/bias, shape=(2,), dtype=float32, "
                      "trainable=True, value=[0. 0.]>")
