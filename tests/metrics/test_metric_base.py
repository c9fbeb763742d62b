"""The Metric base: variables, stateful and stateless use, reset, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import metrics
from loopax.src.state import StateScope


def test_variables_are_named_non_trainable_and_in_creation_order():
    m = metrics.Mean(name="loss")
    assert [v.path for v in m.variables] == ["loss/total", "loss/count"]
    assert not any(v.trainable for v in m.variables)
    assert m.dtype == "float32"


def test_stateless_api_is_the_stateful_code_under_a_state_scope():
    m = metrics.Mean()
    m.update_state([1.0, 2.0])
    before = [np.asarray(v.value) for v in m.variables]
    values = m.stateless_update_state(m.variables, [3.0, 6.0])
    # The metric's own variables are untouched; the new values come back.
    np.testing.assert_array_equal([np.asarray(v.value) for v in m.variables], before)
    np.testing.assert_allclose(values, [12.0, 4.0])
    np.testing.assert_allclose(m.stateless_result(values), 3.0)
    np.testing.assert_allclose(m.stateless_reset_state(), [0.0, 0.0])
    assert isinstance(values, list)


def test_stateless_under_jit_equals_stateful_and_leaks_nothing():
    m = metrics.Mean()

    @jax.jit
    def step(values, x, w):
        values = m.stateless_update_state(values, x, sample_weight=w)
        return values, m.stateless_result(values)

    values = m.stateless_reset_state()
    batches = [(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 2.0])),
               (np.array([4.0, 5.0, 6.0]), np.array([0.5, 0.5, 1.0]))]
    for x, w in batches:
        values, result = step(values, x, w)
        m.update_state(x, sample_weight=w)
        np.testing.assert_allclose(result, m.result(), rtol=1e-6)
    # No tracer leaked into the metric's variables.
    assert all(isinstance(v.value, jax.Array) and not isinstance(v.value, jax.core.Tracer)
               for v in m.variables)
    hand = (1 + 6 + 2 + 2.5 + 6) / (1 + 0 + 2 + 0.5 + 0.5 + 1)
    np.testing.assert_allclose(m.result(), hand, rtol=1e-6)


def test_seed_000_pattern_assigns_values_back():
    # Variables go into jit, values come out, assign() them back, result().
    acc = metrics.CategoricalAccuracy()
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 1]]
    p = np.array([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.2, 0.5, 0.3]])
    step = jax.jit(lambda mv, a, b: acc.stateless_update_state(mv, a, b))
    mv = acc.variables
    for _ in range(2):
        mv = step(mv, y, p)
    for variable, value in zip(acc.variables, mv):
        variable.assign(value)
    np.testing.assert_allclose(acc.result(), 0.75)
    acc.reset_state()
    np.testing.assert_allclose([v.numpy() for v in acc.variables], [0.0, 0.0])
    np.testing.assert_allclose(acc.result(), 0.0)


def test_wrong_number_of_values_says_what_was_expected():
    m = metrics.Mean(name="loss")
    with pytest.raises(ValueError, match=r"(?s)1 entries but 2.*loss/total.*loss/count"):
        m.stateless_update_state([jnp.zeros(())], 1.0)
    with pytest.raises(ValueError, match="shape"):
        m.stateless_result([jnp.zeros(()), jnp.zeros((2,))])


def test_stateful_update_inside_jit_points_to_the_stateless_api():
    m = metrics.Mean()
    with pytest.raises(RuntimeError, match="stateless"):
        jax.jit(lambda x: m.update_state(x))(jnp.ones(2))


def test_custom_metric_and_nested_metric_variables():
    class MaxAbs(metrics.Metric):
        def __init__(self, name="max_abs", dtype=None):
            super().__init__(name=name, dtype=dtype)
            self.peak = self.add_variable((), "zeros", name="peak")
            self.mean = metrics.Mean(name="inner")

        def update_state(self, values):
            self.peak.assign(jnp.maximum(self.peak.value, jnp.max(jnp.abs(jnp.asarray(values)))))
            self.mean.update_state(values)

        def result(self):
            return self.peak.value + self.mean.result()

    m = MaxAbs()
    assert [v.path for v in m.variables] == ["max_abs/peak", "inner/total", "inner/count"]
    np.testing.assert_allclose(m([1.0, -3.0]), 3.0 + (-1.0))
    values = jax.jit(m.stateless_update_state)(m.variables, jnp.array([5.0, 1.0]))
    np.testing.assert_allclose(m.stateless_result(values), 5.0 + 4.0 / 4)
    m.reset_state()
    np.testing.assert_allclose(m.result(), 0.0)


def test_update_accepts_variables_and_tensors_and_reads_scopes():
    m = metrics.Sum()
    m.update_state(loopax.Variable([1.0, 2.0]))
    m.update_state(loopax.constant([3.0]))
    np.testing.assert_allclose(m.result(), 6.0)
    with StateScope([(m.total, jnp.asarray(10.0))]):
        np.testing.assert_allclose(m.result(), 10.0)


def test_config():
    assert metrics.Mean(name="m").get_config() == {"name": "m", "dtype": "float32"}
    auto = [metrics.Precision().name, metrics.Precision().name]
    assert auto == ["precision", "precision_1"]
