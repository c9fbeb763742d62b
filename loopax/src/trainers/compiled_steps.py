"""`CompiledSteps`: the engine `fit`, `evaluate` and `predict` run on, one per
`compile()`. It holds the steps as pure functions of values (asked once per
`PassKind` from its `StepSource`, for a Model `step_functions.ModelSteps`), their
`StepProgram`s per `(PassKind, feed, length)`, the `ExecutionPlanner`s and the
first-batch facts. The runner gets the engine, never the model, so the engine runs
a hand-written step over arrays as well (tests/trainers/test_compiled_steps.py).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import jax

from loopax.src.distribution import distribution, placement
from loopax.src.trainers.execution_planner import ExecutionPlanner
from loopax.src.trainers.pass_kind import PREDICT, PassKind
from loopax.src.trainers.programs import StepProgram

# Whether settled loops run as static-length scans: None decides by backend
# (tests set it to exercise both programs on one machine).
STATIC_LOOPS: bool | None = None


def static_loops_wanted() -> bool:
    """On accelerators (a runtime trip count cost 1.55x per MLP step on an H100);
    on CPU both forms run alike (bench/fit_mlp.py), so the dynamic one is kept."""
    if STATIC_LOOPS is not None:
        return STATIC_LOOPS
    return jax.default_backend() != "cpu"


class StepSource(Protocol):
    """Where an engine's steps come from (a Model: `step_functions.ModelSteps`)."""

    def value_step(self, kind: PassKind, example_batch: Any) -> tuple[Callable, list, str]:
        """`(step, state groups of Variables, style)` for `kind`."""

    def finalize_logs(self, kind: PassKind) -> Callable | None:
        """`(logs, state) -> logs to report`, applied inside the compiled call."""

    def stop_requested(self, kind: PassKind) -> bool:
        """Whether a batch hook asked the pass to end (Keras's `stop_training`)."""


class CompiledSteps:
    """A model's steps, their compiled programs and planners (see the module docstring).

    Attributes:
        programs: `(kind, feed, length, run_eagerly[, distribution])` -> `StepProgram`.
        planners: `(kind, on_device, batch_size)` -> `ExecutionPlanner`.
        example_batch: `jax.ShapeDtypeStruct`s of the latest first batch.
        output_spec: the model's output spec for a batch checked against the loss.
        checked_batches: shape signatures of the batches checked so far.
    """

    def __init__(self, source: StepSource, steps_per_execution: int | str = "auto",
                 run_eagerly: bool = False) -> None:
        self.source = source
        self.run_eagerly = bool(run_eagerly)
        self.planners: dict[tuple[PassKind, bool, int | None], ExecutionPlanner] = {}
        self.steps_per_execution = steps_per_execution
        self._value_steps: dict[PassKind, tuple] = {}
        self.programs: dict[tuple, StepProgram] = {}
        self.example_batch: Any = None
        self.output_spec: Any = None
        self.checked_batches: set = set()
        self._pads: dict[tuple, bool] = {}
        self._partial_expected: set[PassKind] = set()

    @property
    def steps_per_execution(self) -> int | str:
        """Steps fused into one compiled call: an int, or "auto"."""
        return self._steps_per_execution

    @steps_per_execution.setter
    def steps_per_execution(self, value: int | str) -> None:
        ExecutionPlanner(value)   # validates
        self._steps_per_execution = value
        self.planners.clear()   # planned for the old value

    def value_step(self, kind: PassKind) -> tuple:
        """`(step, state groups, style)` of `kind`; the last group is the global
        seed state for a model's steps."""
        if kind not in self._value_steps:
            self._value_steps[kind] = self.source.value_step(kind, self.example_batch)
        return self._value_steps[kind]

    def state_groups(self, kind: PassKind) -> list:
        """The groups of Variables `kind`'s step carries (what a `LiveState` holds)."""
        return self.value_step(kind)[1]

    def stop_requested(self, kind: PassKind) -> bool:
        return bool(self.source.stop_requested(kind))

    def expect_batches(self, kind: PassKind, partial_batch_size: int | None) -> None:
        """Notes, before a pass of `kind` asks for its programs, whether its data may
        end in a partial batch (`partial_batch_size` rows; None, unknown for a
        generator: it may), see `pads_partial_batches`."""
        if partial_batch_size is None or partial_batch_size:
            self._partial_expected.add(kind)

    def pads_partial_batches(self, kind: PassKind) -> bool:
        """Whether `kind`'s passes over device data run their last, partial batch
        padded through the full batches' one-step program (padded_batches.py):
        the source says the steps are row-wise (a source without
        `pads_partial_batches`: never) and, for training and evaluation, a pass
        expected a partial batch before the program was built. The program then
        takes the batch's real rows as an argument; one built for data without a
        partial batch does not (it traces and compiles a little less), and a
        later partial batch gets a program of its own. Decided once per engine."""
        if self.run_eagerly:
            return False
        key = (kind, distribution())
        if key not in self._pads:
            ask = getattr(self.source, "pads_partial_batches", None)
            self._pads[key] = ask is not None and bool(ask(kind)) and (
                kind is PREDICT or kind in self._partial_expected)
        return self._pads[key]

    def planner(self, kind: PassKind, on_device: bool = True,
                batch_size: int | None = None) -> ExecutionPlanner:
        """The planner of `kind`'s passes over device (or host) data in batches of
        `batch_size` rows (another size runs other programs, at other speeds)."""
        key = (kind, on_device, batch_size)
        if key not in self.planners:
            self.planners[key] = ExecutionPlanner(
                self.steps_per_execution, static_loops=static_loops_wanted(),
                weigh_compile=jax.default_backend() == "cpu", host=not on_device)
        return self.planners[key]

    def program(self, kind: PassKind, feed: str = "batch", length: str = "one") -> StepProgram:
        """`kind`'s `StepProgram` for `feed` and `length` (programs.py), built once
        per distribution; with `run_eagerly`, the step as plain Python."""
        dist = distribution()
        key = (kind, feed, length, self.run_eagerly) + ((dist,) if dist is not None else ())
        if key not in self.programs:
            step, groups, _ = self.value_step(kind)
            predict = kind is PREDICT
            self.programs[key] = StepProgram(
                placement.shard_step(step, groups),   # no-op without a distribution
                feed, length, finalize=None if predict else self.source.finalize_logs(kind),
                predict=predict,
                counts_rows=feed == "batch" and not predict and self.pads_partial_batches(kind),
                eager=self.run_eagerly, wait=placement.calls_must_wait())
        return self.programs[key]
