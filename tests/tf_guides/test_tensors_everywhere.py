"""Results of loopax's own TensorFlow-style names are Tensors when computed eagerly, as
TensorFlow's EagerTensors are: `tape.gradient`/`jacobian` and `loopax.function` outputs
have `.numpy()` and can be watched and used as jacobian sources (TensorFlow's autodiff
guide does both). Traced results (fit's step, inside another function) stay arrays."""

import jax
import jax.numpy as jnp
import numpy as np

import loopax


def test_gradient_is_a_tensor_that_a_second_tape_can_watch():
    x = loopax.constant([1.0, 2.0, 3.0])
    with loopax.GradientTape() as tape:
        tape.watch(x)
        y = loopax.ops.sum(x ** 3)
    grad = tape.gradient(y, x)                      # 3 x^2
    assert isinstance(grad, loopax.Tensor)
    np.testing.assert_allclose(grad.numpy(), [3.0, 12.0, 27.0])
    with loopax.GradientTape() as tape2:
        tape2.watch(grad)
        z = grad * grad
    np.testing.assert_allclose(tape2.jacobian(z, grad).numpy(), np.diag([6.0, 24.0, 54.0]))


def test_jacobian_and_variable_gradient_are_tensors():
    w = loopax.Variable([2.0, -1.0])
    with loopax.GradientTape(persistent=True) as tape:
        y = w * w
        total = loopax.ops.sum(y)
    jacobian = tape.jacobian(y, w)
    grads = tape.gradient(total, [w])
    assert isinstance(jacobian, loopax.Tensor) and isinstance(grads[0], loopax.Tensor)
    np.testing.assert_allclose(jacobian.numpy(), np.diag([4.0, -2.0]))
    np.testing.assert_allclose(grads[0].numpy(), [4.0, -2.0])


def test_function_output_is_a_tensor_and_a_jacobian_source():
    @loopax.function
    def square_plus_one(x):
        return x * x + 1.0, {"twice": 2.0 * x}

    out, extra = square_plus_one(np.array([1.0, 3.0], np.float32))
    assert isinstance(out, loopax.Tensor) and isinstance(extra["twice"], loopax.Tensor)
    np.testing.assert_allclose(out.numpy(), [2.0, 10.0])
    with loopax.GradientTape() as tape:
        tape.watch(out)
        y = loopax.ops.log(out)
    np.testing.assert_allclose(tape.jacobian(y, out).numpy(), np.diag([0.5, 0.1]), rtol=1e-6)


def test_traced_results_stay_arrays():
    """Inside jax.jit (and so fit's compiled step) nothing is wrapped."""
    @loopax.function
    def double(x):
        return 2.0 * x

    def grad_inside(x):
        v = loopax.constant(x)
        with loopax.GradientTape() as tape:
            tape.watch(v)
            y = loopax.ops.sum(double(v) ** 2)
        return tape.gradient(y, v)

    seen = []
    jax.jit(lambda x: seen.append(type(double(x))) or double(x))(np.ones(2, np.float32))
    assert not issubclass(seen[0], loopax.Tensor)
    np.testing.assert_allclose(np.asarray(grad_inside(np.array([1.0, 2.0], np.float32))),
                               [8.0, 16.0])


# ---- eager layer and model calls, Variable.assign*, NumPy on Tensors (issue 36) ----

def _mlp():
    return loopax.Sequential([loopax.Input((3,)), loopax.layers.Dense(2)])


def test_eager_model_call_on_numpy_returns_a_tensor():
    model = _mlp()
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    kernel, bias = (np.asarray(w) for w in model.weights)
    out = model(x)
    assert isinstance(out, loopax.Tensor)
    np.testing.assert_allclose(out.numpy(), x @ kernel + bias, rtol=1e-5)
    assert out.shape == (4, 2) and out.shape.as_list() == [4, 2]
    assert out.shape.rank == 2 and out.shape.num_elements() == 8
    assert out.device.endswith(f"device:{jax.devices()[0].platform.upper()}:0")
    layer_out = model.layers[0](x)                   # a layer called alone, too
    assert isinstance(layer_out, loopax.Tensor)


def test_numpy_functions_convert_tensors_as_tensorflow_does():
    """`np.max(t)`, `np.add(t, 1)` give NumPy results (as on tf.Tensor); NumPy arrays
    on the left of an operator still come back to loopax (a Tensor)."""
    t = loopax.constant([[1.0, 5.0], [3.0, 2.0]])
    assert np.max(t) == 5.0
    added = np.add(t, 1)
    assert type(added) is np.ndarray
    np.testing.assert_array_equal(added, [[2.0, 6.0], [4.0, 3.0]])
    assert float(100 * np.max(loopax.ops.softmax(t))) > 50
    assert isinstance(np.ones((2, 2), np.float32) + t, loopax.Tensor)
    v = loopax.Variable([1.0, 2.0])
    np.testing.assert_array_equal(np.multiply(v, 2), [2.0, 4.0])


def test_eager_outputs_stay_usable_as_jax_arrays():
    """Keras-on-JAX code treats a layer's output as a jax.Array: jnp, jit, grad,
    the array's own methods and `.at` keep working."""
    model = _mlp()
    x = np.ones((2, 3), np.float32)
    out = model(x)
    expected = np.asarray(out.value)
    np.testing.assert_allclose(jnp.tanh(out), np.tanh(expected), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(lambda a: a * 2)(out), expected * 2)
    np.testing.assert_allclose(jax.grad(lambda a: jnp.sum(a ** 2))(out), 2 * expected,
                               rtol=1e-6)
    np.testing.assert_allclose(out.reshape(-1), expected.reshape(-1))
    np.testing.assert_allclose(out.sum(), expected.sum(), rtol=1e-6)
    np.testing.assert_allclose(out.at[0, 0].set(7.0)[0, 0], 7.0)
    assert out.astype(jnp.bfloat16).dtype == jnp.bfloat16
    out.block_until_ready()


def test_traced_and_stateless_calls_stay_arrays():
    model = _mlp()
    x = np.ones((2, 3), np.float32)
    seen = []

    @jax.jit
    def traced(x):
        y = model(x)
        seen.append(type(y))
        return y
    traced(x)
    assert not issubclass(seen[0], loopax.Tensor)
    out, _ = model.stateless_call(model.trainable_variables, model.non_trainable_variables, x)
    assert isinstance(out, jax.Array)


def test_eager_output_keeps_its_keras_mask():
    emb = loopax.layers.Embedding(5, 2, mask_zero=True)
    out = emb(np.array([[1, 0, 3]]))
    assert isinstance(out, loopax.Tensor)
    np.testing.assert_array_equal(out._keras_mask, [[True, False, True]])
    lstm = loopax.layers.LSTM(2, return_sequences=True)
    seq = lstm(out)
    # The masked step repeats the previous output (the mask reached the LSTM).
    np.testing.assert_allclose(seq.numpy()[0, 1], seq.numpy()[0, 0])


def test_assign_returns_a_tensor_eagerly():
    v = loopax.Variable(1.0)
    assert v.assign_add(2.0).numpy() == 3.0
    assert isinstance(v.assign_sub(1.0), loopax.Tensor) and float(v) == 2.0
    assert v.assign(5.0, read_value=False) is None and float(v) == 5.0

    @loopax.function
    def step():
        return v.assign_add(1.0) * 2.0
    np.testing.assert_allclose(step().numpy(), 12.0)
    assert float(v) == 6.0


def test_tensor_shape_is_a_tuple_with_tensorflow_methods():
    shape = loopax.constant(np.zeros((2, 3, 4), np.float32)).shape
    assert shape == (2, 3, 4) and hash(shape) == hash((2, 3, 4))
    assert shape[1] == 3 and isinstance(shape[1], int)
    assert shape[1:].as_list() == [3, 4] and shape[1:].rank == 2
    assert shape.num_elements() == 24 and shape.is_fully_defined()
    assert jax.tree_util.tree_leaves(shape) == [2, 3, 4]
    assert np.zeros(shape).shape == (2, 3, 4)
