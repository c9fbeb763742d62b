"""The state model: Variable, StateScope, name scopes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax.src.naming import name_scope
from loopax.src.state import StateScope, Variable, autocast_scope, check_values_match


def test_variable_basics_and_assign():
    v = Variable(np.array([1.0, 2.0]), name="w")
    assert v.shape == (2,) and v.dtype == jnp.float32 and v.trainable
    v.assign([3.0, 4.0])
    np.testing.assert_allclose(v.numpy(), [3.0, 4.0])
    v.assign_add(np.ones(2))
    v.assign_sub(jnp.array([0.5, 0.5]))
    np.testing.assert_allclose(np.asarray(v), [3.5, 4.5])
    with pytest.raises(ValueError, match=r"shape \(3,\).*'w'.*\(2,\)"):
        v.assign(np.zeros(3))


def test_variable_from_initializer_and_dtype():
    v = Variable("zeros", shape=(2, 3), dtype="float32", name="z")
    assert v.shape == (2, 3) and float(jnp.sum(v.value)) == 0.0
    i = Variable(3)
    assert i.dtype == jnp.int32
    with pytest.raises(ValueError, match="needs `shape=`"):
        Variable("zeros")


def test_variable_operators_with_numpy_jax_and_scalars_on_both_sides():
    v = Variable(2.0)
    a = np.float32(5.0)
    j = jnp.asarray(5.0)
    for left, right, expect in [
        (v, 3.0, 6.0),
        (3.0, v, 6.0),
        (a, v, 10.0),
        (v, j, 10.0),
        (j, v, 10.0),
    ]:
        assert float(left * right) == expect
    assert float(j - v) == 3.0 and float(v - j) == -3.0
    assert float(np.ones(()) - v) == -1.0
    assert bool(v < 3.0) and float(-v) == -2.0 and float(v ** 2) == 4.0
    m = Variable(np.eye(2))
    np.testing.assert_allclose(np.asarray(m @ np.ones((2, 1))), np.ones((2, 1)))
    np.testing.assert_allclose(np.asarray(m[0]), [1.0, 0.0])


def test_variables_are_pytrees_for_jit_and_grad():
    vs = [Variable(2.0, name="a"), Variable(np.array([1.0, 3.0]), name="b")]

    @jax.jit
    def f(vars_):
        a, b = vars_
        return jnp.sum(a.value * b.value ** 2)

    assert float(f(vs)) == pytest.approx(2.0 * 10.0)
    grads = jax.grad(f)(vs)
    # d/da = sum(b^2) = 10; d/db = 2 a b = [4, 12]
    assert float(grads[0].value) == pytest.approx(10.0)
    np.testing.assert_allclose(np.asarray(grads[1].value), [4.0, 12.0])
    leaves = jax.tree_util.tree_leaves(vs)
    assert len(leaves) == 2 and isinstance(leaves[0], jax.Array)


def test_state_scope_substitutes_and_collects():
    v = Variable(1.0)
    w = Variable(10.0)
    with StateScope([(v, 5.0)]) as scope:
        assert float(v.value) == 5.0
        assert float(w.value) == 10.0  # unmapped: its own value
        v.assign(v.value + 1.0)
        w.assign(20.0)
        assert float(v.value) == 6.0 and float(w.value) == 20.0
    assert float(v.value) == 1.0 and float(w.value) == 10.0  # untouched
    assert float(scope.get_current_value(v)) == 6.0
    assert float(scope.get_current_value(w)) == 20.0
    assert scope.assigned_variables == [v, w]


def test_state_scopes_nest_inner_first():
    v = Variable(1.0)
    with StateScope([(v, 2.0)]):
        with StateScope([]) as inner:
            assert float(v.value) == 2.0
            v.assign(3.0)
        assert float(v.value) == 2.0
    assert float(inner.get_current_value(v)) == 3.0


def test_state_scope_under_jit_is_pure():
    v = Variable(1.0)

    @jax.jit
    def step(value):
        with StateScope([(v, value)]) as scope:
            v.assign_add(1.0)
        return scope.get_current_value(v)

    assert float(step(jnp.asarray(5.0))) == 6.0
    assert float(v.value) == 1.0


def test_assigning_a_tracer_outside_a_scope_is_a_clear_error():
    v = Variable(1.0, name="counter")

    @jax.jit
    def bad(x):
        v.assign(x)
        return x

    with pytest.raises(RuntimeError, match="counter.*stateless"):
        bad(jnp.asarray(2.0))


def test_on_missing_reports_unmapped_variables():
    a, b = Variable(1.0, name="a"), Variable(2.0, name="b")
    seen = []
    with StateScope([(a, 1.0)], on_missing=seen.append):
        _ = a.value + b.value
        b.assign(3.0)
    assert seen and all(s is b for s in seen)


def test_check_values_match_names_count_order_and_shapes():
    vs = [Variable(np.zeros((2, 3)), name="kernel"), Variable(np.zeros(3), name="bias")]
    with pytest.raises(ValueError, match=r"(?s)1 entries but 2 were expected.*0: kernel \(2, 3\)"):
        check_values_match(vs, [np.zeros((2, 3))], "trainable_variables", "dense.stateless_call")
    with pytest.raises(ValueError, match=r"trainable_variables\[1\]` has shape \(4,\).*bias"):
        check_values_match(vs, [np.zeros((2, 3)), np.zeros(4)], "trainable_variables", "m")


def test_name_scope_sets_paths():
    with name_scope("block"):
        with name_scope("dense"):
            v = Variable(0.0, name="kernel")
    assert v.path == "block/dense/kernel" and v.name == "kernel"
    with pytest.raises(ValueError):
        Variable(0.0, name="a/b")


def test_variable_created_from_tracer_is_refused():
    @jax.jit
    def f(x):
        return Variable(x).value

    with pytest.raises(RuntimeError, match="created from a traced value"):
        f(jnp.ones(()))


# ---- pytree round trips keep a Variable's metadata -------------------------

def _round_trip(variable, how):
    if how == "tree_map":
        return jax.tree.map(lambda a: a, variable)
    leaves, treedef = jax.tree_util.tree_flatten([variable])
    return jax.tree_util.tree_unflatten(treedef, leaves)[0]


ROUND_TRIPS = ["tree_map", "flatten_unflatten"]


@pytest.mark.parametrize("how", ROUND_TRIPS)
def test_round_trip_keeps_the_constraint(how):
    layer = loopax.layers.Dense(2, kernel_constraint=loopax.constraints.NonNeg())
    layer.build((None, 3))
    copy = _round_trip(layer.kernel, how)
    assert copy.constraint is layer.kernel.constraint
    # The constraint still does its job on the copy: negatives become 0 (NonNeg's rule).
    np.testing.assert_array_equal(np.asarray(copy.constraint(jnp.array([-1.0, 2.0]))), [0.0, 2.0])


@pytest.mark.parametrize("how", ROUND_TRIPS)
def test_round_trip_keeps_autocast_off(how):
    v = Variable(np.ones(2, np.float32), name="moving_mean", autocast=False)
    copy = _round_trip(v, how)
    assert copy.autocast is False
    with autocast_scope("float16"):   # a mixed-precision call: this one stays float32
        assert copy.value.dtype == jnp.float32


@pytest.mark.parametrize("how", ROUND_TRIPS)
def test_round_trip_keeps_the_seed_state_flag(how):
    generator = loopax.random.SeedGenerator(1)
    assert _round_trip(generator.state, how).is_seed_state is True


@pytest.mark.parametrize("how", ROUND_TRIPS)
def test_round_trip_keeps_the_layout(how):
    data_parallel = loopax.distribution.DataParallel()
    with data_parallel.scope():
        v = Variable(np.zeros((2, 3), np.float32), name="w")
    assert v._layout is not None
    copy = _round_trip(v, how)
    assert copy._layout is v._layout and copy._layout.axes == (None, None)


@pytest.mark.parametrize("how", ROUND_TRIPS)
def test_round_trip_keeps_the_aggregation(how):
    v = Variable(0.0, name="total", aggregation="sum")
    assert _round_trip(v, how).aggregation == "sum"


@pytest.mark.parametrize("how", ROUND_TRIPS)
def test_round_trip_keeps_name_path_and_trainable(how):
    with name_scope("dense"):
        v = Variable(0.0, name="count", trainable=False)
    copy = _round_trip(v, how)
    assert (copy.name, copy.path, copy.trainable) == ("count", "dense/count", False)


def test_key_paths_name_the_weights():
    with name_scope("dense"):
        kernel, bias = Variable(np.zeros((3, 2)), name="kernel"), Variable(np.zeros(2), name="bias")
    paths = [jax.tree_util.keystr(path, simple=True, separator="/")
             for path, _ in jax.tree_util.tree_flatten_with_path([kernel, bias])[0]]
    assert paths == ["0/dense/kernel", "1/dense/bias"]
    assert jax.tree_util.keystr(jax.tree_util.tree_flatten_with_path([kernel])[0][0][0]) == \
        "[0]['dense/kernel']"


def test_jit_over_variables_traces_once_also_for_round_tripped_copies():
    traces = []

    @jax.jit
    def total(variables):
        traces.append(1)
        return sum(jnp.sum(v.value) for v in variables)

    layer = loopax.layers.Dense(2, kernel_constraint=loopax.constraints.NonNeg())
    layer.build((None, 3))
    weights = list(layer.weights)
    for _ in range(3):
        total(weights)
    total(jax.tree.map(lambda a: a + 1.0, weights))   # new Variables, same metadata
    assert len(traces) == 1


def test_an_unhashable_constraint_still_compiles():
    class EqualityConstraint:   # defines __eq__ only: Python makes it unhashable
        def __call__(self, w):
            return w

        def __eq__(self, other):
            return isinstance(other, EqualityConstraint)

    v = Variable(np.ones(2, np.float32), name="w")
    v.constraint = EqualityConstraint()
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: x.value * 2)(v)), [2.0, 2.0])
