"""Every optimizer's numbers against a NumPy recurrence of Keras's update
(and optax where optax's form is Keras's), over 4 steps of a tiny problem."""

import numpy as np
import optax
import optimizer_references as ref
import pytest
from optimizer_checks import assert_all_close, make_problem, train

from loopax import optimizers

# (optimizer class, NumPy step, hyperparameters). Large epsilons make the
# placement of epsilon (Keras's vs. other forms) visible in the numbers.
CASES = [
    (optimizers.SGD, ref.sgd_step, {}),
    (optimizers.SGD, ref.sgd_step, {"momentum": 0.9}),
    (optimizers.SGD, ref.sgd_step, {"momentum": 0.8, "nesterov": True}),
    (optimizers.Adam, ref.adam_step, {}),
    (optimizers.Adam, ref.adam_step, {"epsilon": 0.1, "beta_1": 0.8}),
    (optimizers.Adam, ref.adam_step, {"amsgrad": True, "epsilon": 0.1}),
    (optimizers.Adamax, ref.adamax_step, {"epsilon": 0.1}),
    (optimizers.Nadam, ref.nadam_step, {"epsilon": 0.1}),
    (optimizers.RMSprop, ref.rmsprop_step, {}),
    (optimizers.RMSprop, ref.rmsprop_step, {"momentum": 0.5, "centered": True, "epsilon": 0.1}),
    (optimizers.Adagrad, ref.adagrad_step, {"initial_accumulator_value": 0.5, "epsilon": 0.1}),
    (optimizers.Adadelta, ref.adadelta_step, {"rho": 0.8, "epsilon": 0.1}),
    (optimizers.Lion, ref.lion_step, {"beta_1": 0.8}),
    (optimizers.Lamb, ref.lamb_step, {"epsilon": 0.1}),
    (optimizers.Adafactor, ref.adafactor_step, {}),
    (optimizers.Adafactor, ref.adafactor_step, {"clip_threshold": 0.5, "epsilon_2": 0.3}),
]


@pytest.mark.parametrize("cls,step_fn,hp", CASES,
                         ids=[f"{c.__name__}-{'-'.join(map(str, h.values())) or 'default'}"
                              for c, _, h in CASES])
def test_matches_keras_recurrence(cls, step_fn, hp):
    init, grads = make_problem()
    shared = ref.nadam_shared(len(grads), **hp) if cls is optimizers.Nadam else None
    expected = ref.run(step_fn, init, grads, lr=0.1, shared=shared, **hp)
    assert_all_close(train(cls(learning_rate=0.1, **hp), init, grads), expected)


def test_adamw_is_adam_after_decoupled_decay():
    init, grads = make_problem()
    expected = ref.run(ref.adam_step, init, grads, lr=0.1, weight_decay=0.2)
    assert_all_close(train(optimizers.AdamW(learning_rate=0.1, weight_decay=0.2), init, grads),
                     expected)
    # Keras's decoupled decay before an Adam step is optax.adamw's update.
    params = [np.asarray(v) for v in init]
    tx = optax.adamw(0.1, eps=1e-7, weight_decay=0.2)
    state = tx.init(params)
    for g in grads:
        updates, state = tx.update(g, state, params)
        params = optax.apply_updates(params, updates)
    # Equal up to epsilon's placement (negligible at eps=1e-7 here).
    assert_all_close(expected, params, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ours,theirs", [
    (lambda: optimizers.SGD(0.1, momentum=0.9), lambda: optax.sgd(0.1, momentum=0.9)),
    (lambda: optimizers.RMSprop(0.1, epsilon=1e-3), lambda: optax.rmsprop(0.1, eps=1e-3)),
    (lambda: optimizers.Adagrad(0.1), lambda: optax.adagrad(0.1, eps=1e-7)),
    (lambda: optimizers.Lion(0.1), lambda: optax.lion(0.1, weight_decay=0.0)),
], ids=["sgd", "rmsprop", "adagrad", "lion"])
def test_matches_optax_where_forms_agree(ours, theirs):
    init, grads = make_problem()
    tx = theirs()
    params = [np.asarray(v) for v in init]
    state = tx.init(params)
    for g in grads:
        updates, state = tx.update(g, state, params)
        params = optax.apply_updates(params, updates)
    assert_all_close(train(ours(), init, grads), params)


def test_slot_variables_follow_keras_names_and_order():
    init, grads = make_problem(steps=1)
    opt = optimizers.Adam(name="adam")
    train(opt, init, grads)
    assert [v.path for v in opt.variables] == [
        "adam/iteration", "adam/learning_rate", "adam/kernel_momentum", "adam/bias_momentum",
        "adam/kernel_velocity", "adam/bias_velocity"]
    assert all(not v.trainable for v in opt.variables)
    assert int(opt.iterations) == 1
    g = grads[0][0]
    np.testing.assert_allclose(opt.variables[2].numpy(), 0.1 * g, rtol=1e-6)  # (1-b1) g
