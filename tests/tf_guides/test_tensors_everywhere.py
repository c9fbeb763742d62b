"""Results of loopax's own TensorFlow-style names are Tensors when computed eagerly, as
TensorFlow's EagerTensors are: `tape.gradient`/`jacobian` and `loopax.function` outputs
have `.numpy()` and can be watched and used as jacobian sources (TensorFlow's autodiff
guide does both). Traced results (fit's step, inside another function) stay arrays."""

import jax
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
