"""TensorFlow 2 habits that loopax accepts as TensorFlow does (issue 21, "What to
build" item 5): an op as an initializer, lists for assign_add/assign_sub,
`constant(name=)`."""

import functools

import numpy as np
import pytest

import loopax


def test_a_random_op_works_as_a_kernel_initializer():
    # Keras and TF call an initializer as init(shape, dtype=dtype): an op such as
    # random.normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None) must get
    # dtype by keyword (positionally it would land in `mean`).
    layer = loopax.layers.Dense(3, kernel_initializer=functools.partial(
        loopax.random.normal, seed=7))
    layer(np.zeros((2, 4), np.float32))
    expected = loopax.random.normal((4, 3), dtype="float32", seed=7)
    assert layer.kernel.dtype == np.float32
    np.testing.assert_array_equal(layer.kernel.numpy(), np.asarray(expected))


def test_an_unseeded_op_as_initializer_draws_standard_normal_numbers():
    loopax.utils.set_random_seed(0)
    v = loopax.Variable(loopax.random.normal, shape=(200, 50))
    values = v.numpy()
    assert v.dtype == np.float32
    assert abs(values.mean()) < 0.03 and abs(values.std() - 1.0) < 0.03   # N(0, 1)


@pytest.mark.parametrize("method, delta, expected", [
    ("assign_add", [1, 1], [2.0, 3.0]),
    ("assign_sub", [0.5, 1.5], [0.5, 0.5]),
    ("assign_add", (1.0, -1.0), [2.0, 1.0]),
], ids=["assign_add_int_list", "assign_sub_float_list", "assign_add_tuple"])
def test_assign_add_and_sub_take_python_lists_like_assign(method, delta, expected):
    v = loopax.Variable(np.array([1.0, 2.0], np.float32))
    getattr(v, method)(delta)
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), expected)


def test_assign_add_of_a_list_inside_a_function():
    total = loopax.Variable(np.zeros(2, np.float32))

    @loopax.function
    def step():
        total.assign_add([1.0, 2.0])
        return total

    step()
    np.testing.assert_array_equal(np.asarray(step()), [2.0, 4.0])


def test_constant_takes_tensorflows_name_argument():
    c = loopax.constant([1.0, 2.0], name="weights")
    assert isinstance(c, loopax.Tensor) and c.dtype == np.float32
    np.testing.assert_array_equal(c.numpy(), [1.0, 2.0])
