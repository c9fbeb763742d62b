"""Learning-rate schedules: `schedule(step) -> learning rate`.

An optimizer given a schedule evaluates `schedule(optimizer.iterations)` at
every step, inside the compiled update, so the schedule must be written with
`jax.numpy` (all of these are). `step` is the number of updates applied so
far (0 on the first update), a Python int, an array or a Variable. The
formulas and defaults are Keras 3's.
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.tensor import unwrap
from loopax.src.utils.registry import Registry


def _as_float(step):
    return jnp.asarray(unwrap(step), jnp.float32)


@export("loopax.optimizers.schedules.LearningRateSchedule")
class LearningRateSchedule:
    """Base class: subclass it and define `__call__(step)` and `get_config()`."""

    def __call__(self, step):
        raise NotImplementedError(
            f"{type(self).__name__} must implement `__call__(self, step)`.")

    def get_config(self) -> dict[str, Any]:
        raise NotImplementedError(
            f"{type(self).__name__} must implement `get_config()` to be saved.")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Any:
        return cls(**config)


def _check_positive(value, arg, schedule):
    if not value > 0:
        raise ValueError(f"{schedule}: `{arg}` must be > 0, got {arg}={value!r}.")


class _StepDecay(LearningRateSchedule):
    """A decay driven by `p = step / decay_steps`, floored with `staircase=True`
    so the rate drops in steps every `decay_steps` updates."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate,
                 staircase=False, name=None):
        _check_positive(decay_steps, "decay_steps", type(self).__name__)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name or type(self).__name__

    def _progress(self, step):
        p = _as_float(step) / self.decay_steps
        return jnp.floor(p) if self.staircase else p

    def get_config(self) -> dict[str, Any]:
        return dict(initial_learning_rate=self.initial_learning_rate,
                    decay_steps=self.decay_steps, decay_rate=self.decay_rate,
                    staircase=self.staircase, name=self.name)


@export("loopax.optimizers.schedules.ExponentialDecay")
class ExponentialDecay(_StepDecay):
    """`initial_learning_rate * decay_rate ** p`, `p = step / decay_steps`
    (floored with `staircase=True`).

    `schedule(step)` returns the rate at optimizer step `step` (a float32 scalar).

    Args:
        initial_learning_rate: The rate at step 0.
        decay_steps: The length of one decay period, > 0.
        decay_rate: The decay factor per period.
        staircase: Floor `p` so the rate drops in steps (default False).
        name: The schedule's name (default: the class name).

    Raises:
        ValueError: `decay_steps` is not > 0.
    """

    def __call__(self, step):
        return self.initial_learning_rate * jnp.power(
            jnp.float32(self.decay_rate), self._progress(step))


@export("loopax.optimizers.schedules.PiecewiseConstantDecay")
class PiecewiseConstantDecay(LearningRateSchedule):
    """`values[0]` while `step <= boundaries[0]`, `values[i]` while
    `boundaries[i-1] < step <= boundaries[i]`, `values[-1]` after the last.

    `schedule(step)` returns the rate at optimizer step `step` (a float32 scalar).

    Args:
        boundaries: Increasing step numbers.
        values: The rates, one more than `boundaries`.
        name: The schedule's name (default "PiecewiseConstant").

    Raises:
        ValueError: `values` is not one longer than `boundaries`, or `boundaries`
            does not increase.
    """

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                "PiecewiseConstantDecay: `values` needs exactly one more entry "
                f"than `boundaries`; got {len(boundaries)} boundaries and "
                f"{len(values)} values.")
        if list(boundaries) != sorted(boundaries):
            raise ValueError(
                f"PiecewiseConstantDecay: `boundaries` must increase, got {boundaries}.")
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step):
        interval = jnp.searchsorted(jnp.asarray(self.boundaries),
                                    jnp.asarray(unwrap(step)), side="left")
        return jnp.asarray(self.values, jnp.float32)[interval]

    def get_config(self) -> dict[str, Any]:
        return dict(boundaries=self.boundaries, values=self.values, name=self.name)


@export("loopax.optimizers.schedules.PolynomialDecay")
class PolynomialDecay(LearningRateSchedule):
    """`(initial - end) * (1 - step / decay_steps) ** power + end`.

    Without `cycle` the rate stays at `end_learning_rate` after `decay_steps`;
    with `cycle` the decay restarts over the next multiple of `decay_steps`.

    `schedule(step)` returns the rate at optimizer step `step` (a float32 scalar).

    Args:
        initial_learning_rate: The rate at step 0.
        decay_steps: The length of the decay, > 0.
        end_learning_rate: The final rate (default 0.0001).
        power: The polynomial's power (default 1.0: linear).
        cycle: Restart the decay after `decay_steps` (default False).
        name: The schedule's name (default "PolynomialDecay").

    Raises:
        ValueError: `decay_steps` is not > 0.
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001,
                 power=1.0, cycle=False, name="PolynomialDecay"):
        _check_positive(decay_steps, "decay_steps", "PolynomialDecay")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        step = _as_float(step)
        decay_steps = jnp.float32(self.decay_steps)
        if self.cycle:
            multiplier = jnp.where(step == 0, 1.0, jnp.ceil(step / decay_steps))
            decay_steps = decay_steps * multiplier
        else:
            step = jnp.minimum(step, decay_steps)
        fraction_left = 1.0 - step / decay_steps
        return ((self.initial_learning_rate - self.end_learning_rate)
                * jnp.power(fraction_left, self.power) + self.end_learning_rate)

    def get_config(self) -> dict[str, Any]:
        return dict(initial_learning_rate=self.initial_learning_rate,
                    decay_steps=self.decay_steps,
                    end_learning_rate=self.end_learning_rate, power=self.power,
                    cycle=self.cycle, name=self.name)


@export("loopax.optimizers.schedules.InverseTimeDecay")
class InverseTimeDecay(_StepDecay):
    """`initial_learning_rate / (1 + decay_rate * p)`, `p = step / decay_steps`
    (floored with `staircase=True`).

    `schedule(step)` returns the rate at optimizer step `step` (a float32 scalar).

    Args:
        initial_learning_rate: The rate at step 0.
        decay_steps: The length of one decay period, > 0.
        decay_rate: The decay factor per period.
        staircase: Floor `p` so the rate drops in steps (default False).
        name: The schedule's name (default: the class name).

    Raises:
        ValueError: `decay_steps` is not > 0.
    """

    def __call__(self, step):
        return self.initial_learning_rate / (1.0 + self.decay_rate * self._progress(step))


def _cosine(fraction, alpha):
    """From 1 at fraction 0 down to `alpha` at fraction 1."""
    cosine = 0.5 * (1.0 + jnp.cos(jnp.float32(math.pi) * fraction))
    return (1.0 - alpha) * cosine + alpha


@export("loopax.optimizers.schedules.CosineDecay")
class CosineDecay(LearningRateSchedule):
    """Cosine decay from a peak to `alpha * peak` over `decay_steps`, after
    an optional linear warmup.

    Without warmup (`warmup_target=None`) the peak is `initial_learning_rate`.
    With warmup the rate climbs linearly from `initial_learning_rate` to
    `warmup_target` over `warmup_steps`, then decays from `warmup_target`.
    The rate stays at its final value after `warmup_steps + decay_steps`.

    `schedule(step)` returns the rate at optimizer step `step` (a float32 scalar).

    Args:
        initial_learning_rate: The peak without warmup; the start of the warmup with it.
        decay_steps: The length of the cosine decay, > 0.
        alpha: The final rate as a fraction of the peak (default 0.0).
        name: The schedule's name (default "CosineDecay").
        warmup_target: The peak reached by the warmup, or None for no warmup.
        warmup_steps: The length of the warmup (default 0; > 0 with `warmup_target`).

    Raises:
        ValueError: `decay_steps` is not > 0, or `warmup_target` without
            `warmup_steps` > 0.
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0,
                 name="CosineDecay", warmup_target=None, warmup_steps=0):
        _check_positive(decay_steps, "decay_steps", "CosineDecay")
        if warmup_target is not None and warmup_steps <= 0:
            raise ValueError(
                "CosineDecay: `warmup_target` needs `warmup_steps` > 0, got "
                f"warmup_steps={warmup_steps!r}.")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = _as_float(step)
        if self.warmup_target is None:
            fraction = jnp.minimum(step, self.decay_steps) / self.decay_steps
            return self.initial_learning_rate * _cosine(fraction, self.alpha)
        step = jnp.minimum(step, self.decay_steps + self.warmup_steps)
        warming = self.initial_learning_rate + (
            self.warmup_target - self.initial_learning_rate) * step / self.warmup_steps
        decaying = self.warmup_target * _cosine(
            (step - self.warmup_steps) / self.decay_steps, self.alpha)
        return jnp.where(step < self.warmup_steps, warming, decaying)

    def get_config(self) -> dict[str, Any]:
        return dict(initial_learning_rate=self.initial_learning_rate,
                    decay_steps=self.decay_steps, alpha=self.alpha, name=self.name,
                    warmup_target=self.warmup_target, warmup_steps=self.warmup_steps)


@export("loopax.optimizers.schedules.CosineDecayRestarts")
class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov & Hutter 2016).

    The first period lasts `first_decay_steps`; each next period is `t_mul`
    times longer and starts from a peak `m_mul` times the previous one.

    `schedule(step)` returns the rate at optimizer step `step` (a float32 scalar).

    Args:
        initial_learning_rate: The first peak.
        first_decay_steps: The length of the first period, > 0.
        t_mul: How much longer each period is than the previous (default 2.0).
        m_mul: How much lower each peak is than the previous (default 1.0).
        alpha: The rate at the end of each period, as a fraction of its peak
            (default 0.0).
        name: The schedule's name (default "SGDRDecay").

    Raises:
        ValueError: `first_decay_steps` is not > 0.
    """

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0,
                 m_mul=1.0, alpha=0.0, name="SGDRDecay"):
        _check_positive(first_decay_steps, "first_decay_steps", "CosineDecayRestarts")
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self.t_mul = t_mul
        self.m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        fraction = _as_float(step) / self.first_decay_steps
        t_mul = jnp.float32(self.t_mul)
        if self.t_mul == 1.0:
            restarts = jnp.floor(fraction)
            fraction = fraction - restarts
        else:
            # Periods grow geometrically: period i starts at (1 - t^i) / (1 - t).
            restarts = jnp.floor(
                jnp.log(1.0 - fraction * (1.0 - t_mul)) / jnp.log(t_mul))
            periods_done = (1.0 - t_mul ** restarts) / (1.0 - t_mul)
            fraction = (fraction - periods_done) / t_mul ** restarts
        cosine = 0.5 * jnp.float32(self.m_mul) ** restarts * (
            1.0 + jnp.cos(jnp.float32(math.pi) * fraction))
        return self.initial_learning_rate * ((1.0 - self.alpha) * cosine + self.alpha)

    def get_config(self) -> dict[str, Any]:
        return dict(initial_learning_rate=self.initial_learning_rate,
                    first_decay_steps=self.first_decay_steps, t_mul=self.t_mul,
                    m_mul=self.m_mul, alpha=self.alpha, name=self.name)


@export("loopax.optimizers.schedules.LinearWarmup")
class LinearWarmup(LearningRateSchedule):
    """A linear warmup in front of any learning rate or schedule.

    For `step < warmup_steps` the rate climbs linearly from
    `initial_learning_rate` to the rate `after_warmup` starts at; from then on
    it is `after_warmup(step - warmup_steps)` (or the constant `after_warmup`).

        LinearWarmup(ExponentialDecay(1e-3, 1000, 0.5), warmup_steps=100)

    `schedule(step)` returns the rate at optimizer step `step` (a float32 scalar).

    Args:
        after_warmup: A schedule (or any callable `f(step)`) or a constant rate.
        warmup_steps: The length of the warmup, > 0.
        initial_learning_rate: The rate at step 0 (default 0.0).
        name: The schedule's name (default "LinearWarmup").

    Raises:
        ValueError: `warmup_steps` is not > 0.
    """

    def __init__(self, after_warmup, warmup_steps, initial_learning_rate=0.0,
                 name="LinearWarmup"):
        _check_positive(warmup_steps, "warmup_steps", "LinearWarmup")
        self.after_warmup = after_warmup
        self.warmup_steps = warmup_steps
        self.initial_learning_rate = initial_learning_rate
        self.name = name

    def _after(self, step):
        if callable(self.after_warmup):
            return jnp.asarray(self.after_warmup(step), jnp.float32)
        return jnp.float32(self.after_warmup)

    def __call__(self, step):
        step = _as_float(step)
        target = self._after(jnp.float32(0))
        warming = self.initial_learning_rate + (
            target - self.initial_learning_rate) * step / self.warmup_steps
        after = self._after(jnp.maximum(step - self.warmup_steps, 0.0))
        return jnp.where(step < self.warmup_steps, warming, after)

    def get_config(self) -> dict[str, Any]:
        after = self.after_warmup
        if isinstance(after, LearningRateSchedule):
            after = serialize(after)
        return dict(after_warmup=after, warmup_steps=self.warmup_steps,
                    initial_learning_rate=self.initial_learning_rate, name=self.name)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Any:
        config = dict(config)
        if isinstance(config["after_warmup"], dict):
            config["after_warmup"] = deserialize(config["after_warmup"])
        return cls(**config)


ALL_SCHEDULES = {cls.__name__: cls for cls in (
    ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, InverseTimeDecay,
    CosineDecay, CosineDecayRestarts, LinearWarmup)}
_REGISTRY = Registry("learning-rate schedule", ALL_SCHEDULES, base=LearningRateSchedule,
                     accepts="custom ones with `custom_objects={'Name': cls}`")


@export("loopax.optimizers.schedules.serialize")
def serialize(schedule: LearningRateSchedule) -> dict[str, Any]:
    """`{"class_name": ..., "config": ...}` for a LearningRateSchedule.

    Args:
        schedule: A LearningRateSchedule.

    Returns:
        A JSON-serializable dict that `deserialize` turns back into the schedule.
    """
    return _REGISTRY.serialize(schedule)


@export("loopax.optimizers.schedules.deserialize")
def deserialize(config: dict[str, Any],
                custom_objects: dict[str, Any] | None = None) -> LearningRateSchedule:
    """The schedule a `serialize()` dict describes.

    Args:
        config: A `serialize()` dict.
        custom_objects: `{name: class}` for custom schedules.

    Returns:
        A new LearningRateSchedule.

    Raises:
        ValueError: the dict has no `class_name`, or it names an unknown class.
    """
    return _REGISTRY.deserialize(config, custom_objects)
