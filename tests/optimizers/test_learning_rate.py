"""The learning rate: a Variable read inside the update (assignment takes
effect without retracing), or a schedule evaluated at `iterations`."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from optimizer_checks import assert_all_close, make_problem, train

import loopax
from loopax import optimizers
from loopax.optimizers import schedules


def count_traces(optimizer):
    """Counts how often the optimizer's update is traced (compiled)."""
    calls = []
    original = optimizer._transform_update

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    optimizer._transform_update = counting
    return calls


def test_assigning_the_learning_rate_takes_effect_without_retrace():
    variable = loopax.Variable(np.zeros(3, np.float32))
    grad = jnp.array([1.0, 2.0, 3.0])
    optimizer = optimizers.SGD(0.1)
    traces = count_traces(optimizer)
    optimizer.apply_gradients([(grad, variable)])
    np.testing.assert_allclose(variable.numpy(), -0.1 * grad, rtol=1e-6)

    optimizer.learning_rate = 0.5                     # what LR callbacks do
    optimizer.apply_gradients([(grad, variable)])
    np.testing.assert_allclose(variable.numpy(), -0.6 * grad, rtol=1e-6)
    optimizer.learning_rate.assign(0.25)              # the Variable itself
    optimizer.apply_gradients([(grad, variable)])
    np.testing.assert_allclose(variable.numpy(), -0.85 * grad, rtol=1e-6)

    assert len(traces) == 1
    assert isinstance(optimizer.learning_rate, loopax.Variable)
    assert float(optimizer.learning_rate) == 0.25


def test_learning_rate_is_data_in_a_jitted_stateless_step():
    optimizer = optimizers.SGD(0.1)
    variable = loopax.Variable(np.zeros(2, np.float32))
    optimizer.build([variable])
    traces = []

    @jax.jit
    def step(opt_vars, grads, trainable):
        traces.append(1)
        return optimizer.stateless_apply(opt_vars, grads, trainable)

    grads, trainable = [jnp.ones(2)], [jnp.zeros(2)]
    values = [v.value for v in optimizer.variables]
    trainable, values = step(values, grads, trainable)
    values[1] = jnp.float32(1.0)                       # the learning_rate slot
    trainable, values = step(values, grads, trainable)
    np.testing.assert_allclose(trainable[0], [-1.1, -1.1], rtol=1e-6)
    assert len(traces) == 1


def test_schedule_is_evaluated_at_each_step():
    schedule = schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    variable = loopax.Variable(np.zeros(1, np.float32))
    optimizer = optimizers.SGD(schedule)
    for _ in range(3):
        optimizer.apply_gradients([(jnp.ones(1), variable)])
    np.testing.assert_allclose(variable.numpy(), [-(0.1 + 0.05 + 0.025)], rtol=1e-6)
    np.testing.assert_allclose(optimizer.learning_rate, 0.0125, rtol=1e-6)
    assert [v.name for v in optimizer.variables] == ["iteration"]
    with pytest.raises(TypeError, match="not settable|cannot be set"):
        optimizer.learning_rate = 0.1


@pytest.mark.parametrize("lr", [optax.linear_schedule(0.3, 0.0, 3), lambda step: 0.3 - 0.1 * step],
                         ids=["optax_schedule", "lambda"])
def test_any_callable_of_the_step_is_a_schedule(lr):
    variable = loopax.Variable(np.zeros(1, np.float32))
    optimizer = optimizers.SGD(lr)
    for _ in range(3):
        optimizer.apply_gradients([(jnp.ones(1), variable)])
    np.testing.assert_allclose(variable.numpy(), [-(0.3 + 0.2 + 0.1)], rtol=1e-6)


def test_keras_callable_without_arguments():
    variable = loopax.Variable(np.zeros(1, np.float32))
    optimizers.SGD(lambda: 0.2).apply_gradients([(jnp.ones(1), variable)])
    np.testing.assert_allclose(variable.numpy(), [-0.2], rtol=1e-6)


def test_schedule_in_adam_matches_reference():
    init, grads = make_problem()
    schedule = schedules.CosineDecay(0.1, decay_steps=3, warmup_target=0.2, warmup_steps=2)
    import optimizer_references as ref
    expected = ref.run(ref.adam_step, init, grads, lr=lambda t: float(schedule(t)))
    assert_all_close(train(optimizers.Adam(schedule), init, grads), expected)


def test_bad_learning_rate_is_a_clear_error():
    with pytest.raises(TypeError, match="learning_rate"):
        optimizers.Adam("fast")
