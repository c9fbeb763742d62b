"""What `model.losses` holds when: the `add_loss` values of the last outermost
call (kept by the layers eagerly, by the active state scope in a stateless call,
a compiled step or a trace), against Keras 3.15.1 on the same model, and no
traced value outliving its trace."""

import jax
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

X = np.linspace(-1, 1, 12, dtype="float32").reshape(4, 3)
WEIGHTS = [np.full((3, 2), 0.5, "float32"), np.zeros(2, "float32")]


def _model(lib):
    """A Dense with activity and kernel penalties, then one layer adding a loss,
    called twice in the model's call."""
    class SquareLoss(lib.layers.Layer):
        def call(self, x):
            self.add_loss(lib.ops.mean(x ** 2))
            return x

    inputs = lib.Input((3,))
    square = SquareLoss()
    h = lib.layers.Dense(2, activity_regularizer="l2", kernel_regularizer="l1")(inputs)
    model = lib.Model(inputs, square(square(h) * 2.0))
    model.set_weights(WEIGHTS)
    return model, square


def _floats(losses):
    assert not any(isinstance(v, jax.core.Tracer) for v in losses), losses
    return [float(v) for v in losses]


@pytest.mark.parametrize("lib", [loopax, keras], ids=["loopax", "keras"])
def test_eager_calls_keep_the_last_outermost_calls_losses(lib):
    """Both calls of the shared layer count; a sub-layer called on its own
    replaces only its own losses in the model's; a new model call replaces all."""
    model, square = _model(lib)
    model(X)
    activity, first, second, kernel = _floats(model.losses)
    np.testing.assert_allclose(
        [activity, first, second, kernel],
        [0.01 * np.sum((X @ WEIGHTS[0]) ** 2) / 4, np.mean((X @ WEIGHTS[0]) ** 2),
         np.mean((2 * X @ WEIGHTS[0]) ** 2), 0.01 * 3.0], rtol=1e-5)
    square(X[:, :2])
    alone = float(np.mean(X[:, :2] ** 2))
    np.testing.assert_allclose(_floats(square.losses), [alone], rtol=1e-5)
    np.testing.assert_allclose(_floats(model.losses), [activity, alone, kernel], rtol=1e-5)
    model(X)
    np.testing.assert_allclose(_floats(model.losses), [activity, first, second, kernel],
                               rtol=1e-5)


def test_losses_in_traces_and_stateless_calls_stay_in_them():
    """Inside `jax.jit` the call's losses are there; after it, and after jitted
    and differentiated stateless calls, `losses` holds no tracer (Keras keeps
    the bare jit's tracers, which fail when used); `return_losses` gives the
    call's values and their gradient."""
    model, _ = _model(loopax)
    model(X)
    eager = _floats(model.losses)
    traced = jax.jit(lambda x: (model(x), sum(model.losses))[1])(X)
    np.testing.assert_allclose(float(traced), sum(eager), rtol=1e-5)
    assert _floats(model.losses) == [eager[-1]]   # the kernel penalty only
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]

    def total(t):
        return sum(model.stateless_call(t, non_trainable, X, return_losses=True)[2])

    np.testing.assert_allclose(float(jax.jit(total)(trainable)), sum(eager), rtol=1e-5)
    kernel_grad = jax.grad(total)(trainable)[0]
    # d/dW of 0.01*sum((XW)^2)/4 + mean((XW)^2) + mean((2XW)^2) + 0.01*sum|W|
    xw = X @ WEIGHTS[0]
    expected = (0.02 / 4 + 2 / 8 + 8 / 8) * X.T @ xw + 0.01
    np.testing.assert_allclose(np.asarray(kernel_grad), expected, rtol=1e-4)
    assert _floats(model.losses) == [eager[-1]]


def test_compute_loss_after_stateless_call_in_a_users_step():
    """A stateless step of the user's (Keras's JAX style) that calls
    `stateless_call` and `compute_loss` in one state scope: the loss counts the
    call's `add_loss` values, as `fit()`'s default step does."""
    model, _ = _model(loopax)
    model.compile(loss="mse")
    model(X)
    expected = sum(_floats(model.losses))
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]

    @jax.jit
    def loss_of(t):
        with loopax.StatelessScope():
            y_pred, _ = model.stateless_call(t, non_trainable, X)
            return model.compute_loss(X, y_pred, y_pred)   # mse 0: only the model's losses

    np.testing.assert_allclose(float(loss_of(trainable)), expected, rtol=1e-5)
