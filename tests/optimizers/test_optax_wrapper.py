"""Any optax GradientTransformation as a loopax optimizer."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from optimizer_checks import assert_all_close, make_problem, make_variables, train

import loopax
from loopax import optimizers


def optax_reference(tx, init, grads):
    params = [jnp.asarray(v) for v in init]
    state = tx.init(params)
    for g in grads:
        updates, state = tx.update(g, state, params)
        params = optax.apply_updates(params, updates)
    return params


@pytest.mark.parametrize("make_tx", [
    lambda: optax.adam(0.1),
    lambda: optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(0.1, weight_decay=0.1)),
    lambda: optax.sgd(optax.exponential_decay(0.1, 1, 0.5), momentum=0.9),
], ids=["adam", "chain_adamw", "sgd_schedule"])
def test_get_wraps_a_transformation_with_optax_numbers(make_tx):
    init, grads = make_problem()
    optimizer = optimizers.get(make_tx())
    assert isinstance(optimizer, optimizers.Optax)
    assert_all_close(train(optimizer, init, grads), optax_reference(make_tx(), init, grads))


def test_state_is_variables_with_readable_names():
    optimizer = optimizers.Optax(optax.adam(0.1), name="opt")
    optimizer.build(make_variables(make_problem()[0]))
    assert [v.path for v in optimizer.variables] == [
        "opt/iteration", "opt/count", "opt/kernel_mu", "opt/bias_mu", "opt/kernel_nu",
        "opt/bias_nu"]


def test_stateless_apply_under_jit_equals_optax():
    init, grads = make_problem()
    optimizer = optimizers.get(optax.adam(0.1))
    optimizer.build(make_variables(init))
    step = jax.jit(lambda ov, g, tv: optimizer.stateless_apply(ov, g, tv))
    trainable, opt_vars = list(init), optimizer.variables
    for g in grads:
        trainable, opt_vars = step(opt_vars, g, trainable)
    assert_all_close(trainable, optax_reference(optax.adam(0.1), init, grads))


def test_none_gradient_updates_only_the_others_state():
    init, grads = make_problem(steps=2)
    optimizer = optimizers.get(optax.adam(0.1))
    variables = make_variables(init)
    optimizer.build(variables)
    with pytest.warns(UserWarning):
        for g in grads:
            optimizer.apply([g[0], None], variables)
    by_name = {v.name: v.numpy() for v in optimizer.variables}
    assert int(by_name["count"]) == 2 and not by_name["bias_mu"].any()
    assert_all_close(variables[:1], optax_reference(optax.adam(0.1), init[:1],
                                                    [g[:1] for g in grads]))


def test_learning_rate_from_inject_hyperparams_is_a_settable_variable():
    variable = loopax.Variable(np.zeros(2, np.float32))
    optimizer = optimizers.get(optax.inject_hyperparams(optax.sgd)(learning_rate=0.1))
    optimizer.apply_gradients([(jnp.ones(2), variable)])
    assert isinstance(optimizer.learning_rate, loopax.Variable)
    optimizer.learning_rate = 0.5
    optimizer.apply_gradients([(jnp.ones(2), variable)])
    np.testing.assert_allclose(variable.numpy(), [-0.6, -0.6], rtol=1e-6)


def test_learning_rate_argument_scales_a_scale_by_transform():
    init, grads = make_problem()
    optimizer = optimizers.Optax(optax.scale_by_adam(), learning_rate=0.1)
    variables = make_variables(init)
    assert_all_close(train(optimizer, init, grads, variables),
                     optax_reference(optax.adam(0.1), init, grads))
    optimizer.learning_rate = 0.0
    before = [v.numpy() for v in variables]
    optimizer.apply_gradients(zip(grads[0], variables))
    assert_all_close(variables, before, atol=0)


def test_without_a_learning_rate_the_error_says_how_to_get_one():
    optimizer = optimizers.get(optax.adam(0.1))
    optimizer.build(make_variables(make_problem()[0]))
    with pytest.raises(AttributeError, match="inject_hyperparams"):
        optimizer.learning_rate
    with pytest.raises(TypeError, match="GradientTransformation"):
        optimizers.Optax("adam")
