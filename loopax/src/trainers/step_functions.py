"""A model's steps as functions of values: `ModelSteps`, the `StepSource` of
a model's `CompiledSteps` (compiled_steps.py compiles what it returns).

`ModelSteps.value_step(kind)` turns `train_step` / `test_step` /
`predict_step` into `step(state, batch) -> (logs, state)` (predict:
`-> (outputs, state)`), whose last state group is the global seed state
(`_carrying_seed_state`):

- the default step and stateless overrides (`(self, state, data)`) are
  called as they are, their output checked (a clear error names the
  expected `(logs, state)` structure);
- a TF-style override (`(self, data)`) reads and assigns Variables;
  it runs inside a `StateScope` mapping the state's Variables to the state
  values and the assignments come back as the new state: a step of the same
  form, so it fuses and compiles like the others. Variables it touches beyond
  the model, optimizer, metrics and the global seed state are found by
  tracing it once and carried as one more group.
"""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import random
from loopax.src.state import pure
from loopax.src.trainers import padded_batches
from loopax.src.trainers.pass_kind import PREDICT, TEST, TRAIN, PassKind

if TYPE_CHECKING:
    from loopax.src.models.model import Model
    from loopax.src.state import Variable

_logger = logging.getLogger("loopax")


class ModelSteps:
    """A model's step methods as pure functions of values.

    Args:
        model: the model (a `Trainer`).
        default_steps: the class whose `train_step` / `test_step` /
            `predict_step` are the default ones (`Trainer`): an override of
            one is called in the style its signature says (`step_style`).
    """

    def __init__(self, model, default_steps):
        self._model = model
        self._default_steps = default_steps
        self._defaults = {kind.step_method: getattr(default_steps, kind.step_method)
                          for kind in (TRAIN, TEST, PREDICT)}

    def step_style(self, name: str) -> str:
        """"default", "stateless" (`step(self, state, data)`) or "tf" (`step(self, data)`)."""
        model = self._model
        if getattr(type(model), name) is self._defaults[name]:
            return "default"
        params = [p for p in inspect.signature(getattr(model, name)).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
        if len(params) == 1 and params[0].kind is not inspect.Parameter.VAR_POSITIONAL:
            return "tf"
        return "stateless"

    def value_step(self, kind: PassKind, example_batch: Any = None) -> tuple:
        """The step of `kind` as `step(state, batch) -> (logs, state)` (predict:
        `-> (outputs, state)`), with the user's output checked; plus the state
        groups (the last one is the global seed state, see `_carrying_seed_state`)
        and the step's style. `example_batch` (`ShapeDtypeStruct`s) is traced to
        find the Variables a TF-style step touches."""
        model = self._model
        method_name = kind.step_method
        style = self.step_style(method_name)
        method = getattr(model, method_name)
        seed_variables = [random.global_seed_state()]
        if style == "tf":
            extras = _discover_extra_variables(model, kind, method, seed_variables,
                                               example_batch)
            groups = state_groups(model, kind, extras)
            flat_vars = [v for g in groups for v in g]
            sizes = [len(g) for g in groups]

            run = pure(method, flat_vars)

            def model_step(state, data):
                out, new_values = run([v for g in state for v in g], data)
                return out, _regroup(new_values, sizes)
        else:
            groups = state_groups(model, kind)

            def model_step(state, data):
                out = method(state, data)
                if kind is PREDICT:
                    return _predict_outputs(out, state)
                return _check_step_output(out, state, method_name, kind)

        step = _carrying_seed_state(model_step, seed_variables)
        return step, groups + [seed_variables], style

    def pads_partial_batches(self, kind: PassKind) -> bool:
        """Whether `kind`'s passes run their partial batch padded through the full
        batches' program (padded_batches.py); the reason why not is logged."""
        reason = padded_batches.why_not_padded(self._model, kind, self._default_steps)
        if reason is not None:
            _logger.debug("%s keeps a program per batch shape: %s", kind.caller, reason)
        return reason is None

    def finalize_logs(self, kind: PassKind) -> Callable | None:
        """(logs, state) -> the logs to report: the step's dict, or the metrics'
        results when the step returned something else or only metric names."""
        return finalize_logs(self._model, kind)

    def stop_requested(self, kind: PassKind) -> bool:
        """Keras's flag a batch hook sets to end the pass after that batch."""
        return bool(getattr(self._model, kind.stop_flag, False))


def state_groups(model: Model, kind: PassKind, extras: Sequence[Variable] = (),
                 ) -> list[list[Variable]]:
    """The Variables of `kind`'s state groups (`kind.state_groups` names them)."""
    groups = []
    for name in kind.state_groups:
        if name == "optimizer_variables":
            groups.append(list(model.optimizer.variables))
        else:
            groups.append(list(getattr(model, name)))
    if extras:
        groups.append(list(extras))
    return groups


def _carrying_seed_state(model_step, seed_variables):
    """`model_step` with the global seed state as one more (last) state group.

    The step runs in a StateScope mapping the seed Variable to its value, so a
    random op with `seed=None` anywhere inside (a layer's call, a custom step)
    splits the carried key and advances it: fresh numbers every step, and the
    same numbers again after `set_random_seed`."""
    run = pure(model_step, seed_variables)

    def step(state, data):
        *model_state, seed_values = state
        (out, new_state), new_seed_values = run(seed_values, tuple(model_state), data)
        return out, (*new_state, new_seed_values)
    return step


def _discover_extra_variables(model, kind, method, seed_variables, batch):
    """Variables a TF-style step touches beyond the model, optimizer, metrics and
    the global seed state: found by tracing it once."""
    groups = state_groups(model, kind) + [seed_variables]
    known = {id(v) for g in groups for v in g}
    extras = []

    def record(variable):
        if id(variable) not in known:
            known.add(id(variable))
            extras.append(variable)

    if batch is None:
        return []
    flat_vars = [v for g in groups for v in g]

    run = pure(method, flat_vars, on_missing=record)

    def probe(values, data):
        out, _ = run(values, data)
        return jax.tree_util.tree_map(lambda a: jnp.asarray(a), out) if out is not None else 0

    jax.eval_shape(probe, [v.value for v in flat_vars], batch)
    return extras


def finalize_logs(model: Model, kind: PassKind) -> Callable | None:
    """(logs, state) -> the logs to report: the step's dict, or the metrics'
    results when the step returned something else or only metric names."""
    if kind is PREDICT:
        return None
    metrics_index = kind.metrics_index

    def finalize(logs, state):
        if isinstance(logs, dict):
            logs = _flatten_dict(logs)
            if not set(logs) <= set(_result_names(model)):
                return logs   # a custom step's own logs (Keras's rule)
            results = _flatten_dict(model._metrics_result_from(state[metrics_index]))
            return {**results, **logs}
        if logs is not None:  # e.g. `return loss`: the history would show untouched metrics
            raise TypeError(
                f"{kind.step_method} returned logs that are {_describe_logs(logs)}; logs must be a "
                "dict of metric values, e.g. `{m.name: m.result() for m in self.metrics}` "
                "(or None to report the compiled metrics).")
        return _flatten_dict(model._metrics_result_from(state[metrics_index]))
    return finalize


def _regroup(flat, sizes):
    out, i = [], 0
    for n in sizes:
        out.append(list(flat[i:i + n]))
        i += n
    return tuple(out)


def _flatten_dict(logs):
    out = {}
    for key, value in logs.items():
        if isinstance(value, dict):
            out.update(_flatten_dict(value))
        else:
            out[key] = value
    return out


def _result_names(model):
    return [name for metric in model.metrics for name in metric._log_names()]


def _describe_groups(groups):
    return "(" + ", ".join(f"{name} [{len(g)} values]" for name, g in groups) + ")"


def _check_step_output(out, state, method_name, kind):
    """The user's `(logs, state)`, with the state's structure checked."""
    names = kind.state_groups
    expected = _describe_groups(list(zip(names, state)))
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise ValueError(
            f"{method_name} must return `(logs, state)` where logs is a dict of metric "
            f"values and state = {expected}: the state it received, updated. It returned "
            f"{_describe(out)}.")
    logs, new_state = out
    if not (isinstance(new_state, (tuple, list)) and len(new_state) == len(state)):
        raise ValueError(
            f"{method_name} returned a state that is {_describe(new_state)}; expected "
            f"{len(state)} groups {expected}.")
    checked = []
    for name, old, new in zip(names, state, new_state):
        new = list(new) if isinstance(new, (list, tuple)) else new
        if not isinstance(new, list) or len(new) != len(old):
            raise ValueError(
                f"{method_name} returned {name} as {_describe(new)}; expected a list of "
                f"{len(old)} values matching the {name} it received.")
        for i, (a, b) in enumerate(zip(old, new)):
            b_shape = tuple(getattr(b, "shape", np.shape(b)))
            if tuple(a.shape) != b_shape:
                raise ValueError(
                    f"{method_name} returned {name}[{i}] with shape {b_shape}, but it "
                    f"received shape {tuple(a.shape)}. Return the values in the order "
                    "and shapes they came in.")
            if getattr(b, "dtype", None) != a.dtype:
                new[i] = jnp.asarray(b, a.dtype)
        checked.append(new)
    return logs, tuple(checked)


def _describe_logs(logs):
    if hasattr(logs, "shape") and hasattr(logs, "dtype"):
        return f"an array of shape {tuple(logs.shape)}"
    return _describe(logs)


def _describe(value):
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of length {len(value)}"
    return f"a {type(value).__name__}"


def _predict_outputs(out, state):
    """`(outputs, (trainable, non_trainable))` from a stateless predict_step, which
    returns Keras's `(outputs, non_trainable)` (the default) or just outputs
    (the non-trainable state is then unchanged)."""
    trainable, non_trainable = state
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], list) \
            and len(out[1]) == len(non_trainable) and all(
                tuple(getattr(a, "shape", ())) == tuple(b.shape)
                for a, b in zip(out[1], non_trainable)):
        return out[0], (trainable, out[1])
    return out, (trainable, non_trainable)
