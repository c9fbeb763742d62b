"""Learning-rate schedules against their closed forms (Python math)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopax
from loopax.optimizers import schedules

steps = st.integers(min_value=0, max_value=5000)


@settings(max_examples=30, deadline=None)
@given(step=steps, staircase=st.booleans())
def test_exponential_decay(step, staircase):
    s = schedules.ExponentialDecay(0.1, decay_steps=100, decay_rate=0.9, staircase=staircase)
    p = step // 100 if staircase else step / 100
    np.testing.assert_allclose(s(step), 0.1 * 0.9 ** p, rtol=1e-5)


@settings(max_examples=30, deadline=None)
@given(step=steps, staircase=st.booleans())
def test_inverse_time_decay(step, staircase):
    s = schedules.InverseTimeDecay(0.1, decay_steps=100, decay_rate=0.5, staircase=staircase)
    p = step // 100 if staircase else step / 100
    np.testing.assert_allclose(s(step), 0.1 / (1 + 0.5 * p), rtol=1e-5)


@settings(max_examples=30, deadline=None)
@given(step=steps)
def test_piecewise_constant_decay(step):
    boundaries, values = [100, 1000], [1.0, 0.5, 0.1]
    expected = values[0] if step <= 100 else values[1] if step <= 1000 else values[2]
    assert float(schedules.PiecewiseConstantDecay(boundaries, values)(step)) == pytest.approx(
        expected
    )


@settings(max_examples=30, deadline=None)
@given(step=steps, cycle=st.booleans(), power=st.sampled_from([0.5, 1.0, 2.0]))
def test_polynomial_decay(step, cycle, power):
    s = schedules.PolynomialDecay(0.1, decay_steps=300, end_learning_rate=0.01, power=power,
                                  cycle=cycle)
    decay_steps = 300 * max(1, math.ceil(step / 300)) if cycle else 300
    clipped = step if cycle else min(step, 300)
    expected = (0.1 - 0.01) * (1 - clipped / decay_steps) ** power + 0.01
    np.testing.assert_allclose(s(step), expected, rtol=1e-5, atol=1e-7)


@settings(max_examples=30, deadline=None)
@given(step=steps)
def test_cosine_decay_and_its_warmup(step):
    plain = schedules.CosineDecay(0.1, decay_steps=1000, alpha=0.1)
    fraction = min(step, 1000) / 1000
    cosine = lambda f: 0.9 * 0.5 * (1 + math.cos(math.pi * f)) + 0.1
    np.testing.assert_allclose(plain(step), 0.1 * cosine(fraction), rtol=1e-5)

    warm = schedules.CosineDecay(0.0, decay_steps=1000, alpha=0.1, warmup_target=0.2,
                                 warmup_steps=200)
    if step < 200:
        expected = 0.2 * step / 200
    else:
        expected = 0.2 * cosine(min(step - 200, 1000) / 1000)
    np.testing.assert_allclose(warm(step), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("t_mul,m_mul", [(1.0, 1.0), (2.0, 0.5)])
def test_cosine_decay_restarts(t_mul, m_mul):
    s = schedules.CosineDecayRestarts(0.1, first_decay_steps=100, t_mul=t_mul, m_mul=m_mul,
                                      alpha=0.0)
    # Period i starts at 100 * (1 + t + ... + t^(i-1)) and peaks at 0.1 * m^i.
    starts = [sum(100 * t_mul ** j for j in range(i)) for i in range(3)]
    for i, start in enumerate(starts):
        np.testing.assert_allclose(s(start), 0.1 * m_mul ** i, rtol=1e-5)
        length = 100 * t_mul ** i
        np.testing.assert_allclose(s(start + length / 2), 0.05 * m_mul ** i, rtol=1e-4)


def test_linear_warmup_in_front_of_a_schedule():
    after = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    s = schedules.LinearWarmup(after, warmup_steps=5, initial_learning_rate=0.0)
    np.testing.assert_allclose([float(s(t)) for t in range(5)],
                               [0.0, 0.02, 0.04, 0.06, 0.08], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(s(15), 0.1 * 0.5, rtol=1e-5)
    np.testing.assert_allclose(schedules.LinearWarmup(0.3, 3)(1), 0.1, rtol=1e-5)


def test_step_may_be_a_variable():
    s = schedules.ExponentialDecay(1.0, 1, 0.5)
    np.testing.assert_allclose(s(loopax.Variable(2, dtype="int32")), 0.25)


@pytest.mark.parametrize("schedule", [
    schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True),
    schedules.PiecewiseConstantDecay([10, 20], [0.3, 0.2, 0.1]),
    schedules.PolynomialDecay(0.1, 10, power=2.0, cycle=True),
    schedules.InverseTimeDecay(0.1, 10, 0.5),
    schedules.CosineDecay(0.0, 10, warmup_target=0.1, warmup_steps=3),
    schedules.CosineDecayRestarts(0.1, 10),
    schedules.LinearWarmup(schedules.CosineDecay(0.1, 10), 5),
], ids=lambda s: type(s).__name__)
def test_config_round_trip(schedule):
    restored = schedules.deserialize(schedules.serialize(schedule))
    assert type(restored) is type(schedule)
    for step in (0, 4, 12, 40):
        np.testing.assert_allclose(restored(step), schedule(step), rtol=1e-6)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="one more entry"):
        schedules.PiecewiseConstantDecay([10, 20], [0.1, 0.2])
    with pytest.raises(ValueError, match="decay_steps"):
        schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="Unknown learning-rate schedule"):
        schedules.deserialize({"class_name": "Nope", "config": {}})
