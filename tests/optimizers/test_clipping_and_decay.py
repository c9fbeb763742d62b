"""Gradient clipping, weight decay, constraints, loss scaling, gradient
accumulation and EMA, against hand computation (SGD, lr 1, so the variable
moves by exactly the processed gradient)."""

import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import optimizers


def one_sgd_step(grads, values=(np.zeros((2, 2)), np.zeros(3)), **kwargs):
    variables = [loopax.Variable(np.asarray(v, np.float32), name=n)
                 for v, n in zip(values, ["kernel", "bias"])]
    optimizers.SGD(1.0, **kwargs).apply_gradients(
        zip([jnp.asarray(g, jnp.float32) for g in grads], variables))
    return [v.numpy() for v in variables]


G = [np.array([[3.0, 0.0], [0.0, 4.0]]), np.array([0.3, 0.0, 0.4])]  # norms 5 and 0.5


def test_clipnorm_clips_each_gradient_on_its_own():
    kernel, bias = one_sgd_step(G, clipnorm=1.0)
    np.testing.assert_allclose(kernel, -G[0] / 5.0, rtol=1e-6)
    np.testing.assert_allclose(bias, -G[1], rtol=1e-6)          # already within the norm


def test_global_clipnorm_clips_all_gradients_jointly():
    global_norm = np.sqrt(25 + 0.25)
    kernel, bias = one_sgd_step(G, global_clipnorm=1.0)
    np.testing.assert_allclose(kernel, -G[0] / global_norm, rtol=1e-6)
    np.testing.assert_allclose(bias, -G[1] / global_norm, rtol=1e-6)


def test_clipvalue_clips_elementwise():
    kernel, bias = one_sgd_step(G, clipvalue=0.35)
    np.testing.assert_allclose(kernel, -np.clip(G[0], -0.35, 0.35), rtol=1e-6)
    np.testing.assert_allclose(bias, -np.clip(G[1], -0.35, 0.35), rtol=1e-6)


def test_only_one_clipping_argument():
    with pytest.raises(ValueError, match="only one of"):
        optimizers.Adam(clipnorm=1.0, clipvalue=1.0)


def test_weight_decay_is_decoupled_and_excludable_by_name():
    values = (np.full((2, 2), 2.0), np.full(3, 2.0))
    kernel, bias = one_sgd_step(G, values, weight_decay=0.1)
    np.testing.assert_allclose(kernel, values[0] - values[0] * 0.1 - G[0], rtol=1e-6)
    np.testing.assert_allclose(bias, values[1] - values[1] * 0.1 - G[1], rtol=1e-6)

    variables = [loopax.Variable(np.asarray(v, np.float32), name=n)
                 for v, n in zip(values, ["kernel", "bias"])]
    optimizer = optimizers.SGD(0.5, weight_decay=0.1)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    optimizer.apply_gradients(zip([jnp.asarray(g, jnp.float32) for g in G], variables))
    np.testing.assert_allclose(variables[0].numpy(), values[0] * (1 - 0.05) - 0.5 * G[0],
                               rtol=1e-6)
    np.testing.assert_allclose(variables[1].numpy(), values[1] - 0.5 * G[1], rtol=1e-6)
    with pytest.raises(ValueError, match="before the optimizer is built"):
        optimizer.exclude_from_weight_decay(var_names=["kernel"])


def test_constraint_is_applied_after_the_update():
    variable = loopax.Variable(np.zeros(3, np.float32))
    variable.constraint = lambda x: jnp.clip(x, -0.5, 0.5)
    optimizers.SGD(1.0).apply_gradients([(jnp.array([2.0, 0.1, -2.0]), variable)])
    np.testing.assert_allclose(variable.numpy(), [-0.5, -0.1, 0.5], rtol=1e-6)


def test_loss_scale_factor_divides_gradients():
    kernel, _ = one_sgd_step(G, loss_scale_factor=4.0)
    np.testing.assert_allclose(kernel, -G[0] / 4.0, rtol=1e-6)
    assert optimizers.SGD(loss_scale_factor=4.0).scale_loss(2.0) == 8.0


def test_gradient_accumulation_applies_the_mean_every_n_calls():
    variable = loopax.Variable(np.zeros(2, np.float32))
    optimizer = optimizers.SGD(1.0, momentum=0.5, gradient_accumulation_steps=2)
    g1, g2, g3, g4 = (jnp.array(v) for v in ([1.0, 2.0], [3.0, 0.0], [1.0, 1.0], [3.0, 3.0]))
    optimizer.apply_gradients([(g1, variable)])
    np.testing.assert_array_equal(variable.numpy(), [0.0, 0.0])
    optimizer.apply_gradients([(g2, variable)])
    m1 = -(g1 + g2) / 2
    np.testing.assert_allclose(variable.numpy(), m1, rtol=1e-6)
    optimizer.apply_gradients([(g3, variable)])
    optimizer.apply_gradients([(g4, variable)])
    m2 = 0.5 * m1 - (g3 + g4) / 2
    np.testing.assert_allclose(variable.numpy(), m1 + m2, rtol=1e-6)
    assert int(optimizer.iterations) == 2   # full updates, as Keras counts them


def test_ema_tracks_and_finalizes_the_average():
    variable = loopax.Variable(np.zeros(2, np.float32))
    optimizer = optimizers.SGD(1.0, use_ema=True, ema_momentum=0.5)
    average = None
    for g in ([1.0, 0.0], [0.0, 2.0], [1.0, 1.0]):
        optimizer.apply_gradients([(jnp.array(g), variable)])
        value = variable.numpy().copy()
        average = value if average is None else 0.5 * average + 0.5 * value
    optimizer.finalize_variable_values([variable])
    np.testing.assert_allclose(variable.numpy(), average, rtol=1e-6)
