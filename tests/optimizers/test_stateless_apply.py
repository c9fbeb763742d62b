"""`stateless_apply` equals `apply_gradients`, eagerly and under `jax.jit`,
in seed 000's style (lists of Variables passed straight into the jitted step)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from optimizer_checks import assert_all_close, make_problem, make_variables, train

import loopax
from loopax import optimizers

FACTORIES = {
    "sgd_nesterov": lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "adam_amsgrad": lambda: optimizers.Adam(0.1, amsgrad=True),
    "nadam": lambda: optimizers.Nadam(0.1),
    "adafactor": lambda: optimizers.Adafactor(0.1),
    "adamw_clipped": lambda: optimizers.AdamW(0.1, global_clipnorm=1.0),
    "optax_adamw": lambda: optimizers.get(optax.adamw(0.1)),
}


@pytest.mark.parametrize("name", FACTORIES)
def test_jitted_stateless_apply_equals_apply_gradients(name):
    init, grads = make_problem()
    stateful = FACTORIES[name]()
    expected_values = train(stateful, init, grads)

    optimizer = FACTORIES[name]()
    variables = make_variables(init)
    optimizer.build(variables)
    traces = []

    @jax.jit
    def step(state, grads):
        traces.append(1)
        trainable, opt_vars = state
        return optimizer.stateless_apply(opt_vars, grads, trainable)

    state = (variables, optimizer.variables)  # Variables go straight into jit
    for g in grads:
        state = step(state, [jnp.asarray(x) for x in g])
    trainable, opt_vars = state
    assert_all_close(trainable, expected_values)
    assert_all_close(opt_vars, [v.numpy() for v in stateful.variables])
    # Nothing was written to the Variables themselves.
    assert_all_close([v.numpy() for v in variables], init, atol=0)
    assert int(optimizer.iterations) == 0
    assert len(traces) <= 2  # the first call sees Variables, later ones arrays


def test_eager_stateless_apply_returns_values_and_leaves_state():
    init, grads = make_problem(steps=2)
    expected = train(optimizers.Adam(0.1), init, grads)
    optimizer = optimizers.Adam(0.1)
    variables = make_variables(init)
    optimizer.build(variables)
    trainable, opt_vars = [v.value for v in variables], [v.value for v in optimizer.variables]
    for g in grads:
        trainable, opt_vars = optimizer.stateless_apply(opt_vars, g, trainable)
    assert all(isinstance(v, jax.Array) for v in trainable + opt_vars)
    assert_all_close(trainable, expected)
    assert int(opt_vars[0]) == 2 and int(optimizer.iterations) == 0


def test_grads_as_variables_from_jax_grad_and_as_tensors():
    init, _ = make_problem()
    variables = make_variables(init)
    x = jnp.ones((4, 3))

    def loss(vs):
        kernel, bias = vs
        return jnp.sum((x @ kernel + bias) ** 2)

    grads = jax.grad(loss)(variables)  # a list of Variables holding gradients
    assert isinstance(grads[0], loopax.Variable)
    expected = [v - 0.1 * np.asarray(g) for v, g in zip(init, jax.grad(loss)(list(init)))]
    optimizers.SGD(0.1).apply_gradients(zip(grads, variables))
    assert_all_close(variables, expected)

    variables = make_variables(init)
    tensors = [loopax.constant(np.asarray(g)) for g in jax.grad(loss)(list(init))]
    optimizers.SGD(0.1).apply(tensors, variables)
    assert_all_close(variables, expected)


def test_none_gradient_skips_its_variable_and_warns_once():
    init, grads = make_problem(steps=2)
    optimizer = optimizers.Adam(0.1)
    variables = make_variables(init)
    optimizer.build(variables)
    with pytest.warns(UserWarning, match="bias"):
        optimizer.apply([grads[0][0], None], variables)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizer.apply([grads[1][0], None], variables)
    np.testing.assert_array_equal(variables[1].numpy(), init[1])
    bias_slots = [v for v in optimizer.variables if v.name.startswith("bias_")]
    assert bias_slots and all(not np.any(v.numpy()) for v in bias_slots)
    expected = train(optimizers.Adam(0.1), init[:1], [g[:1] for g in grads])
    assert_all_close(variables[:1], expected)
    assert int(optimizer.iterations) == 2

    # The same skip works in the stateless path (under jit).
    fresh = optimizers.Adam(0.1)
    fresh.build(make_variables(init))
    with pytest.warns(UserWarning, match="bias"):
        out, _ = jax.jit(lambda ov, g0, tv: fresh.stateless_apply(ov, [g0, None], tv))(
            fresh.variables, jnp.asarray(grads[0][0]), [jnp.asarray(v) for v in init])
    np.testing.assert_array_equal(out[1], init[1])


def test_keras_style_subclass_runs_on_the_same_machinery():
    class MomentumSGD(optimizers.Optimizer):
        def __init__(self, learning_rate=0.1, momentum=0.9, **kwargs):
            super().__init__(learning_rate=learning_rate, **kwargs)
            self.momentum = momentum

        def build(self, var_list):
            if self.built:
                return
            super().build(var_list)
            self.momentums = [self.add_variable_from_reference(v, "m") for v in var_list]

        def update_step(self, gradient, variable, learning_rate):
            m = self.momentums[self._get_variable_index(variable)]
            self.assign(m, self.momentum * m.value - learning_rate * gradient)
            self.assign_add(variable, m.value)

    init, grads = make_problem()
    expected = train(optimizers.SGD(0.1, momentum=0.9), init, grads)
    assert_all_close(train(MomentumSGD(), init, grads), expected)

    optimizer = MomentumSGD()
    optimizer.build(make_variables(init))
    state = (list(init), optimizer.variables)
    step = jax.jit(lambda s, g: optimizer.stateless_apply(s[1], g, s[0]))
    for g in grads:
        trainable, opt_vars = step(state, g)
        state = (trainable, opt_vars)
    assert_all_close(state[0], expected)


def test_apply_inside_an_eager_state_scope_writes_to_the_scope():
    from loopax.src.state import StateScope
    variable = loopax.Variable(np.zeros(2, np.float32))
    optimizer = optimizers.SGD(0.1, momentum=0.5)
    optimizer.build([variable])
    with StateScope([(variable, jnp.ones(2))]) as scope:
        optimizer.apply([jnp.ones(2)], [variable])
    np.testing.assert_allclose(scope.get_current_value(variable), [0.9, 0.9], rtol=1e-6)
    assert int(scope.get_current_value(optimizer.iterations)) == 1
    np.testing.assert_array_equal(variable.numpy(), [0.0, 0.0])
    assert int(optimizer.iterations) == 0


def test_a_variable_listed_twice_is_an_error():
    variable = loopax.Variable(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="more than once"):
        optimizers.SGD(0.1).apply([jnp.ones(2), jnp.ones(2)], [variable, variable])
