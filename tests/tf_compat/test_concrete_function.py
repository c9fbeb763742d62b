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
