"""`get_concrete_function` with fixed values (loopax/src/tf_compat/function.py),
as the tf.function guide uses it: `pow.get_concrete_function(a=TensorSpec, b=2)`
is a function of `a` alone (TF 2.21: square(10.0) == 100, passing b raises
TypeError)."""

from __future__ import annotations

import numpy as np
import pytest

import loopax.tf as tf


def test_fixed_values_are_baked_in_and_only_the_tensors_remain():
    @tf.function
    def power(a, b):
        return a ** b

    square = power.get_concrete_function(a=tf.TensorSpec(None, tf.float32), b=2)
    assert float(square(tf.constant(10.0))) == 100.0
    assert float(square(a=tf.constant(3.0))) == 9.0
    with pytest.raises(TypeError, match="unexpected argument 'b'"):
        square(tf.constant(10.0), b=3)
    assert square.input_signature[0].shape.rank is None


def test_an_object_argument_is_fixed_and_a_tensor_becomes_an_input():
    class Model:
        weight, bias = 2.0, 1.0

    def evaluate(model, x):
        return model.weight * x + model.bias

    x = tf.constant([1.0, 2.0])
    concrete = tf.function(evaluate).get_concrete_function(Model(), x)
    np.testing.assert_allclose(concrete(tf.constant([3.0, 4.0])).numpy(), [7.0, 9.0])
    assert tuple(concrete.input_signature[0].shape) == (2,)


# TensorFlow 2.21's text for the intro_to_graphs guide's `my_relu` after three calls.
MY_RELU_SIGNATURES = """\
Input Parameters:
  x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=tf.float32, name=None)
Output Type:
  TensorSpec(shape=(), dtype=tf.float32, name=None)
Captures:
  None

Input Parameters:
  x (POSITIONAL_OR_KEYWORD): List[Literal[1], Literal[-1]]
Output Type:
  TensorSpec(shape=(2,), dtype=tf.float32, name=None)
Captures:
  None

Input Parameters:
  x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(2,), dtype=tf.float32, name=None)
Output Type:
  TensorSpec(shape=(2,), dtype=tf.float32, name=None)
Captures:
  None"""


def test_pretty_printed_concrete_signatures_print_as_tensorflow():
    @tf.function
    def my_relu(x):
        return tf.maximum(0., x)

    my_relu(tf.constant(5.5))
    my_relu([1, -1])
    my_relu(tf.constant([3., -3.]))
    my_relu(tf.constant(2.5))   # no new trace, no new signature
    assert my_relu.pretty_printed_concrete_signatures() == MY_RELU_SIGNATURES


def test_concrete_function_type_and_inference_fn_as_tensorflow():
    @tf.function
    def double(a):
        return a + a

    strings = double.get_concrete_function(tf.constant("a"))
    assert strings.inference_fn(tf.constant("a")).numpy() == b"aa"
    spec = "TensorSpec(shape=(), dtype=tf.string, name=None)"
    assert strings.function_type == f"(a: {spec}) -> {spec}"   # TF 2.21's text
    assert str(strings) == (f"ConcreteFunction Input Parameters:\n  a (POSITIONAL_OR_KEYWORD): "
                            f"{spec}\nOutput Type:\n  {spec}\nCaptures:\n  None")


def test_graph_internals_raise_an_error_naming_the_loopax_way():
    @tf.function
    def f(x):
        return x * 2

    concrete = f.get_concrete_function(tf.constant(1.0))
    for owner in (f, concrete):
        with pytest.raises(AttributeError, match="jax.make_jaxpr.*lower"):
            owner.graph
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        concrete.nonsense


def test_a_trace_type_subclass_defines_and_the_function_runs():
    class FruitTraceType(tf.types.experimental.TraceType):
        def __init__(self, fruit):
            self.fruit_type = type(fruit)

    class Apple:
        flavor = tf.constant([1, 2])

        def __tf_tracing_type__(self, context):
            return FruitTraceType(self)

    @tf.function
    def get_flavor(fruit):
        return fruit.flavor + 1

    np.testing.assert_array_equal(get_flavor(Apple()).numpy(), [2, 3])


def test_a_concrete_function_refuses_another_dtype_as_tensorflow():
    @tf.function
    def double(a):
        return a + a

    strings = double.get_concrete_function(tf.constant("a"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="traced as a string"):
        strings(tf.constant(1))
    ints = double.get_concrete_function(tf.constant(1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32.*float32"):
        ints(tf.constant(1.5))
    assert int(ints(tf.constant(4))) == 8
