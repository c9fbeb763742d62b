"""Building an optimizer computes a constant optax state with NumPy (no compiled
program), and falls back to one compiled `init` when the state depends on the
parameters' values. Either way the slots hold exactly what `tx.init` returns."""

import collections

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from optimizer_checks import make_problem, make_variables

from loopax import optimizers


def weakly_typed():
    """A transform whose state holds a weakly typed scalar, as `jnp.asarray(0.5)` is."""
    return optax.GradientTransformation(
        lambda params: {"scale": jnp.asarray(0.5),
                        "zeros": jax.tree.map(jnp.zeros_like, params)},
        lambda u, s, p=None: (u, s))


def value_dependent():
    """A transform whose state is made from the parameters' values (a new
    function each time, so no earlier test's compiled program is reused)."""
    def params_times_two(params):
        return jax.tree.map(lambda p: p * 2.0, params)

    return optax.GradientTransformation(params_times_two, lambda u, s, p=None: (u, s))


@pytest.mark.parametrize("make_tx", [
    lambda: optax.adam(0.1),
    lambda: optax.adagrad(0.1, initial_accumulator_value=0.25),
    lambda: optax.chain(optax.clip_by_global_norm(1.0), optax.adafactor(0.1)),
    lambda: optax.sgd(0.1, momentum=0.9),
    value_dependent,
    weakly_typed,
], ids=["adam", "adagrad_fill", "adafactor_factored", "sgd_momentum", "from_values",
        "weakly_typed"])
def test_slots_hold_what_init_returns(make_tx):
    init, _ = make_problem()
    init = [np.asarray(v) + 0.5 for v in init]   # nonzero, so a copy of the params shows
    optimizer = optimizers.Optax(make_tx(), name="opt")
    optimizer.build(make_variables(init))
    params = collections.OrderedDict(
        (k, jnp.asarray(v)) for k, v in zip(["kernel", "bias"], init))
    expected = jax.tree.leaves(make_tx().init(params))
    slots = optimizer.variables[1:]   # after `iteration`
    assert len(slots) == len(expected)
    for slot, want in zip(slots, expected):
        assert slot.dtype == want.dtype and slot.shape == want.shape
        assert slot.value.weak_type == want.weak_type   # dtype promotion in the update
        np.testing.assert_array_equal(np.asarray(slot.value), np.asarray(want))


def test_building_adam_compiles_nothing_and_a_value_dependent_state_compiles_once(
        count_compiles):
    init, _ = make_problem()
    adam = optimizers.Adam(0.1)
    with count_compiles() as compiled:
        adam.build(make_variables(init))
    assert compiled == []
    copying = optimizers.Optax(value_dependent())
    with count_compiles() as compiled:
        copying.build(make_variables(init))
    assert compiled == ["jit(params_times_two)"], compiled
