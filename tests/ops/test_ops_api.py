"""The public surface of loopax.ops: names, Keras signatures, symbolic calls."""

import inspect
import os

import numpy as np
import pytest

import loopax
from loopax import ops

REQUIRED = """
add subtract multiply divide true_divide floor_divide mod power negative abs square sqrt
rsqrt exp expm1 log log1p log2 sin cos tan tanh sign floor ceil round clip maximum minimum
where matmul dot tensordot einsum mean sum prod max min argmax argmin any all cumsum cumprod
std var reshape transpose expand_dims squeeze concatenate stack split tile repeat
broadcast_to pad take take_along_axis arange linspace zeros ones zeros_like ones_like full
full_like eye identity sort argsort top_k equal not_equal less less_equal greater
greater_equal logical_and logical_or logical_not isnan isinf isfinite flip roll diag triu
tril outer norm logsumexp erf
relu relu6 leaky_relu elu selu gelu silu swish softplus softsign sigmoid hard_sigmoid
softmax log_softmax one_hot multi_hot conv depthwise_conv separable_conv conv_transpose
max_pool average_pool moments batch_normalization binary_crossentropy
categorical_crossentropy sparse_categorical_crossentropy dot_product_attention
convert_to_tensor convert_to_numpy cast stop_gradient shape dtype size ndim cond switch
fori_loop while_loop scan map vectorized_map slice slice_update scatter scatter_update
unstack is_tensor
""".split()


def test_every_required_name_is_public():
    missing = [name for name in REQUIRED if not callable(getattr(ops, name, None))]
    assert not missing, missing
    # Keras sub-namespaces.
    assert ops.nn.conv is ops.conv and ops.numpy.mean is ops.mean
    assert ops.linalg.norm is ops.norm and ops.math.top_k is ops.top_k


KERAS_SIGNATURES = [
    ("conv", ["inputs", "kernel", "strides", "padding", "data_format", "dilation_rate"]),
    ("conv_transpose", ["inputs", "kernel", "strides", "padding", "output_padding",
                        "data_format", "dilation_rate"]),
    ("max_pool", ["inputs", "pool_size", "strides", "padding", "data_format"]),
    ("sparse_categorical_crossentropy", ["target", "output", "from_logits", "axis"]),
    ("one_hot", ["x", "num_classes", "axis", "dtype", "sparse"]),
    ("mean", ["x", "axis", "keepdims"]),
    ("clip", ["x", "x_min", "x_max"]),
    ("while_loop", ["cond", "body", "loop_vars", "maximum_iterations"]),
    ("batch_normalization", ["x", "mean", "variance", "axis", "offset", "scale", "epsilon"]),
]


@pytest.mark.parametrize("name,params", KERAS_SIGNATURES,
                         ids=[name for name, _ in KERAS_SIGNATURES])
def test_keras_signatures(name, params):
    assert list(inspect.signature(getattr(ops, name)).parameters) == params


def test_ops_on_symbolic_tensors_build_a_functional_model():
    a = loopax.Input(shape=(3,))
    b = loopax.Input(shape=(2,))
    joined = ops.concatenate([a, b], axis=-1)
    assert joined.shape == (None, 5)
    scaled = ops.multiply(ops.expand_dims(joined, -1), 2.0)
    assert scaled.shape == (None, 5, 1)
    model = loopax.Model([a, b], ops.sum(scaled, axis=[1, 2]))
    xa, xb = np.ones((4, 3), "float32"), np.full((4, 2), 3.0, "float32")
    np.testing.assert_allclose(np.asarray(model([xa, xb])), np.full(4, 2 * (3 + 6)))


def test_errors_on_non_symbolic_inputs_are_unchanged():
    with pytest.raises(TypeError):
        ops.add("a", 1)


@pytest.mark.parametrize("name, args", [
    ("sum", ([1, 2, 3],)), ("mean", ([1.0, 2.0, 4.0],)), ("max", ([[1, 5], [2, 3]],)),
    ("square", ([1.5, -2.0],)), ("add", ([1, 2], [3, 4])), ("cumsum", ([1, 2, 3],)),
    ("nanmean", ([1.0, float("nan"), 3.0],)), ("argmax", ([3, 9, 1],)),
], ids=["sum", "mean", "max-nested", "square", "add-two-lists", "cumsum", "nanmean", "argmax"])
def test_python_lists_are_arrays_as_in_keras(name, args):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    keras = pytest.importorskip("keras")
    ours = getattr(ops, name)(*args)
    theirs = getattr(keras.ops, name)(*args)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype


def test_a_list_that_is_not_numbers_still_fails_clearly():
    with pytest.raises(TypeError):
        ops.sum(["a", "b"])


def test_python_lists_are_arrays_under_a_tape_and_on_symbolic_tensors():
    x = loopax.Variable(np.array([1.0, 2.0, 3.0], "float32"))
    with loopax.GradientTape() as tape:
        y = ops.sum(ops.multiply(x, [2.0, 3.0, 4.0]))
    np.testing.assert_allclose(float(y), 20.0)
    np.testing.assert_allclose(tape.gradient(y, x), [2.0, 3.0, 4.0])
    np.testing.assert_allclose(ops.digitize(np.array([0.5, 2.5], "float32"), [1.0, 2.0]), [0, 2])
    inputs = loopax.Input((3,))
    model = loopax.Model(inputs, ops.add(inputs, [10.0, 20.0, 30.0]))
    np.testing.assert_allclose(model(np.ones((2, 3), "float32")), [[11.0, 21.0, 31.0]] * 2)
