"""LossScaleOptimizer: dynamic loss scaling, against Keras 3 and closed forms."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import mixed_precision, optimizers

INF = np.float32(np.inf)
# Scaled gradients of a (2,) variable; the second step overflowed.
GRADS = [np.array(g, np.float32) for g in
         ([8.0, -4.0], [INF, 1.0], [2.0, 2.0], [4.0, -2.0], [np.nan, 0.0], [1.0, 3.0])]


def run_loopax(inner):
    variable = loopax.Variable(np.array([1.0, -1.0], np.float32))
    optimizer = optimizers.LossScaleOptimizer(inner, initial_scale=4.0, dynamic_growth_steps=2)
    trace = []
    for g in GRADS:
        optimizer.apply([jnp.asarray(g)], [variable])
        trace.append((variable.numpy().copy(), float(optimizer.dynamic_scale.numpy()),
                      int(optimizer.iterations)))
    return trace, optimizer


def test_overflowed_step_is_skipped_and_the_scale_halved():
    trace, optimizer = run_loopax(optimizers.Adam(0.1))
    (w1, s1, i1), (w2, s2, i2) = trace[0], trace[1]
    np.testing.assert_array_equal(w2, w1)            # weights unchanged
    assert (s1, s2) == (4.0, 2.0) and (i1, i2) == (1, 1)
    # Two finite steps in a row double the scale; the NaN step halves it again.
    assert [s for _, s, _ in trace[2:]] == [2.0, 4.0, 2.0, 2.0]
    assert [i for _, _, i in trace] == [1, 1, 2, 3, 3, 4]
    assert optimizer.variables[:2] == [optimizer.step_counter, optimizer.dynamic_scale]


def test_matches_keras_step_by_step():
    os.environ.setdefault("KERAS_BACKEND", "jax")
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "jax":
        pytest.skip("needs Keras on JAX")
    trace, _ = run_loopax(optimizers.Adam(0.1))
    variable = keras.Variable(np.array([1.0, -1.0], np.float32))
    optimizer = keras.optimizers.LossScaleOptimizer(
        keras.optimizers.Adam(0.1), initial_scale=4.0, dynamic_growth_steps=2)
    optimizer.build([variable])
    # (Keras's stateful `apply` of this optimizer fails on JAX; its stateless one works.)
    weights_k, values = [variable.value], [v.value for v in optimizer.variables]
    scale_index = [v.name for v in optimizer.variables].index("dynamic_scale")
    for g, (weights, scale, iterations) in zip(GRADS, trace):
        weights_k, values = optimizer.stateless_apply(values, [jnp.asarray(g)], weights_k)
        np.testing.assert_allclose(weights, np.asarray(weights_k[0]), rtol=1e-6, atol=1e-7)
        assert scale == float(values[scale_index])
        for v, value in zip(optimizer.variables, values):
            v.assign(value)
        assert iterations == int(np.asarray(optimizer.iterations))


def test_skipped_step_leaves_the_inner_slots_unchanged_in_stateless_apply():
    optimizer = optimizers.LossScaleOptimizer(optimizers.Adam(0.1), initial_scale=8.0)
    variable = loopax.Variable(np.ones(2, np.float32))
    optimizer.build([variable])
    step = jax.jit(optimizer.stateless_apply)
    values = [v.value for v in optimizer.variables]
    (w,), values = step(values, [jnp.array([8.0, 8.0])], [variable.value])
    (w2,), values2 = step(values, [jnp.array([INF, 8.0])], [w])
    np.testing.assert_array_equal(w2, w)
    for a, b in zip(values[2:], values2[2:]):      # inner iterations, lr, moments
        np.testing.assert_array_equal(a, b)
    assert float(values2[1]) == 4.0
    np.testing.assert_allclose(w, 1.0 - 0.1, rtol=1e-5)   # Adam's first step: lr * sign


def test_config_round_trip_and_bad_arguments():
    optimizer = optimizers.LossScaleOptimizer(optimizers.SGD(0.5), initial_scale=64.0,
                                              dynamic_growth_steps=10)
    clone = optimizers.deserialize(optimizers.serialize(optimizer))
    assert isinstance(clone, optimizers.LossScaleOptimizer)
    assert (clone.initial_scale, clone.dynamic_growth_steps) == (64.0, 10)
    assert float(clone.learning_rate.numpy()) == 0.5
    with pytest.raises(ValueError, match="set it on the inner optimizer"):
        optimizers.LossScaleOptimizer(optimizers.SGD(), clipnorm=1.0)
    with pytest.raises(TypeError, match="inner_optimizer"):
        optimizers.LossScaleOptimizer("adam")


def _float16_model():
    mixed_precision.set_global_policy("mixed_float16")
    try:
        loopax.utils.set_random_seed(3)
        inputs = loopax.Input((4,))
        h = loopax.layers.Dense(16, activation="relu")(inputs)
        outputs = loopax.layers.Dense(1, dtype="float32")(h)
        return loopax.Model(inputs, outputs)
    finally:
        mixed_precision.set_global_policy(None)


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    return x, (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]


def test_compile_wraps_the_optimizer_under_mixed_float16():
    model = _float16_model()
    model.compile(optimizers.SGD(0.01), "mse")
    assert isinstance(model.optimizer, optimizers.LossScaleOptimizer)
    model.compile(optimizers.SGD(0.01), "mse", auto_scale_loss=False)
    assert isinstance(model.optimizer, optimizers.SGD)


def _fit_with_overflows(steps_per_execution):
    """A float16 model whose initial scale (2**40) overflows float16 gradients:
    fit must skip those steps, halve the scale until it fits, then train."""
    model = _float16_model()
    optimizer = optimizers.LossScaleOptimizer(optimizers.SGD(0.02), initial_scale=2.0 ** 40)
    model.compile(optimizer, "mse", steps_per_execution=steps_per_execution)
    x, y = _data()
    initial = model.get_weights()
    history = model.fit(x, y, batch_size=8, epochs=6, shuffle=False, verbose=0)
    return model, optimizer, initial, history


def test_float16_training_recovers_from_overflowed_steps_fused_and_unfused():
    model, optimizer, initial, history = _fit_with_overflows(4)
    steps, applied = 6 * 8, int(optimizer.iterations)
    skipped = steps - applied
    assert 0 < skipped < 30
    # Each skipped step halved the scale (no 2000-step growth in 48 steps).
    assert float(optimizer.dynamic_scale.numpy()) == 2.0 ** (40 - skipped)
    assert all(np.isfinite(w).all() for w in model.get_weights())
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert not all(np.array_equal(a, b) for a, b in zip(initial, model.get_weights()))

    model1, optimizer1, _, history1 = _fit_with_overflows(1)
    assert int(optimizer1.iterations) == applied
    np.testing.assert_array_equal(history1.history["loss"], history.history["loss"])
    for a, b in zip(model1.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_an_overflowed_fit_step_leaves_the_weights_unchanged():
    model = _float16_model()
    optimizer = optimizers.LossScaleOptimizer(optimizers.Adam(0.1), initial_scale=2.0 ** 40)
    model.compile(optimizer, "mse")
    x, y = _data()
    initial = model.get_weights()
    model.fit(x[:8], y[:8], batch_size=8, epochs=1, verbose=0)
    for a, b in zip(initial, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert float(optimizer.dynamic_scale.numpy()) == 2.0 ** 39
    assert int(optimizer.iterations) == 0
    assert all(not np.any(v.numpy()) for v in optimizer.inner_optimizer.variables[2:])


def test_stateless_custom_loop_with_loss_scaling_as_docs_scaling_md_writes_it():
    model = _float16_model()
    optimizer = optimizers.LossScaleOptimizer(optimizers.SGD(0.02), initial_scale=2.0 ** 40)
    optimizer.build(model.trainable_variables)
    loss_object = loopax.losses.MeanSquaredError()

    def loss_fn(trainable, non_trainable, x, y, opt_values):
        y_pred, non_trainable = model.stateless_call(trainable, non_trainable, x)
        loss = loss_object(y, y_pred)
        with loopax.StatelessScope(zip(optimizer.variables, opt_values)):
            return optimizer.scale_loss(loss), (loss, non_trainable)

    @jax.jit
    def step(trainable, non_trainable, opt_values, x, y):
        grads, (loss, non_trainable) = jax.grad(loss_fn, has_aux=True)(
            trainable, non_trainable, x, y, opt_values)
        trainable, opt_values = optimizer.stateless_apply(opt_values, grads, trainable)
        return trainable, non_trainable, opt_values, loss

    state = ([v.value for v in model.trainable_variables],
             [v.value for v in model.non_trainable_variables],
             [v.value for v in optimizer.variables])
    x, y = _data()
    losses = []
    for i in range(0, 64 * 6, 8):
        *state, loss = step(*state, x[i % 64:i % 64 + 8], y[i % 64:i % 64 + 8])
        losses.append(float(loss))
    opt_values = state[2]
    skipped = 48 - int(opt_values[2])          # the inner optimizer's iterations
    assert 0 < skipped < 30 and float(opt_values[1]) == 2.0 ** (40 - skipped)
    # The same steps as fit() takes on the same batches.
    model_fit, optimizer_fit, _, _ = _fit_with_overflows(1)
    assert int(optimizer_fit.iterations) == 48 - skipped
    for a, b in zip(state[0], model_fit.trainable_variables):
        np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-5, atol=1e-6)
