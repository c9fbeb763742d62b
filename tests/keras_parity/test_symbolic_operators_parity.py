"""Python operators on symbolic tensors in a functional model, against Keras:
every operator Keras's KerasTensor supports, both operand orders, with another
symbolic tensor, a Python number, a list or a NumPy array; then a model built
from them, trained with the same weights in both libraries."""

import numpy as np
import pytest
from keras_reference import keras

import loopax

RNG = np.random.default_rng(0)
A = RNG.uniform(0.5, 2.0, size=(5, 3)).astype("float32")
B = RNG.choice(np.array([-1.5, -0.5, 0.0, 0.5, 1.5], "float32"), size=(5, 3))
W = RNG.normal(size=(3, 2)).astype("float32")

BINARY = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "truediv": lambda x, y: x / y, "floordiv": lambda x, y: x // y,
    "mod": lambda x, y: x % y, "pow": lambda x, y: x ** y,
    "lt": lambda x, y: x < y, "le": lambda x, y: x <= y, "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y, "ne": lambda x, y: x != y,
    "and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y,
}
# The other operand: another symbolic tensor, a Python number on either side, a
# NumPy array on the right (Keras refuses NumPy arrays on the left, and lists).
OPERANDS = {
    "tensor": lambda op, a, b: op(a, b),
    "tensor_reflected": lambda op, a, b: op(b, a),
    "number": lambda op, a, b: op(a, 1.5),
    "number_reflected": lambda op, a, b: op(1.5, a),
    "array": lambda op, a, b: op(a, B[0]),
}
UNARY_AND_INDEXING = {
    "neg": lambda a: -a, "abs": lambda a: abs(a), "invert": lambda a: ~(a > 1.0),
    "round": lambda a: round(a), "slice": lambda a: a[:, 1:3], "index": lambda a: a[:, 0],
    "newaxis": lambda a: a[:, None, :], "ellipsis": lambda a: a[..., -1],
    "matmul_array": lambda a: a @ W, "matmul_tensor": lambda a: a[:, :, None] @ a[:, None, :],
    "reshape": lambda a: a.reshape((-1, 3, 1)), "squeeze": lambda a: a[:, :1].squeeze(1),
}


def run_graph(lib, build):
    a = lib.Input((3,), name="a")
    b = lib.Input((3,), name="b")
    out = build(a, b)
    model = lib.Model([a, b], out)
    return out, np.asarray(model([A, B]))


def assert_same_as_keras(build):
    ours_tensor, ours = run_graph(loopax, build)
    theirs_tensor, theirs = run_graph(keras, build)
    assert tuple(ours_tensor.shape) == tuple(theirs_tensor.shape)
    assert str(ours_tensor.dtype) == str(theirs_tensor.dtype)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("operand", list(OPERANDS))
@pytest.mark.parametrize("operator", list(BINARY))
def test_binary_operator_matches_keras(operator, operand):
    op = BINARY[operator]
    assert_same_as_keras(lambda a, b: OPERANDS[operand](op, a, b))


@pytest.mark.parametrize("name", list(UNARY_AND_INDEXING))
def test_unary_indexing_and_matmul_match_keras(name):
    build = UNARY_AND_INDEXING[name]
    assert_same_as_keras(lambda a, b: build(a))


def test_in_place_operators_rebind_as_in_keras():
    def build(a, b):
        x = a
        x += b
        x *= 2.0
        x -= a
        x /= 4.0
        x **= 2
        return x
    assert_same_as_keras(build)


def test_numpy_arrays_on_the_left_and_lists_work_too():
    """Keras refuses `np_array * keras_tensor` and lists as operands; loopax records
    them (checked with NumPy)."""
    _, out = run_graph(loopax, lambda a, b: (B[0] * a - (W.T @ a[:, :, None])[..., 0, :]
                                             + [1.0, 2.0, 3.0]))
    expected = B[0] * A - (W.T @ A[:, :, None])[..., 0, :] + [1.0, 2.0, 3.0]
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_symbolic_tensors_refuse_bool_and_iteration_and_compare_by_identity():
    a = loopax.Input((3,))
    with pytest.raises(TypeError, match="Python bool"):
        bool(a)
    with pytest.raises(TypeError, match="Iterating"):
        list(a)
    assert (a == a) is True and (a == loopax.Input((3,))) is False
    assert {a: 1}[a] == 1


def operator_model(lib):
    """Dense layers joined only by Python operators (the guides' `inputs * h`)."""
    inputs = lib.Input((3,), name="x")
    h = lib.layers.Dense(3, name="h", kernel_initializer="zeros")(inputs)
    g = lib.layers.Dense(3, name="g", kernel_initializer="zeros")(inputs)
    y = inputs * h
    y += g
    y = y - 0.5 * h + h / (1.0 + abs(g)) - (-g) + 0.1 * h ** 2
    outer = inputs[:, :, None] @ h[:, None, :]
    y = y + outer[:, 0, :] + (outer @ np.ones((3, 1), "float32"))[..., 0]
    gate = (h > 0) & (g <= 0.5) | ~(inputs >= 0.0)
    y = y * gate + (1.0 - y) * (h != g)
    return lib.Model(inputs, lib.layers.Dense(1, name="out", kernel_initializer="zeros")(y))


def test_model_built_with_operators_trains_as_in_keras():
    x = RNG.normal(size=(32, 3)).astype("float32")
    y = RNG.normal(size=(32, 1)).astype("float32")
    theirs = operator_model(keras)
    ours = operator_model(loopax)
    weights = [RNG.normal(size=w.shape).astype("float32") * 0.5 for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    histories = []
    for model, lib in [(ours, loopax), (theirs, keras)]:
        model.compile(optimizer=lib.optimizers.SGD(0.01), loss="mse")
        histories.append(model.fit(x, y, epochs=3, batch_size=8, shuffle=False,
                                   verbose=0).history["loss"])
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-4)
    for w, k in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(w, np.asarray(k), rtol=1e-4, atol=1e-5)
