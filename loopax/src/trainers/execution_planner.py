"""How a pass is cut into compiled calls: `ExecutionPlanner` and `StepBounds`.

Each call runs "single" steps (`n` one-step calls back to back, reported to
callbacks as one execution) or a "loop" (`n` steps fused in one program; its
trip count a runtime value, so changing `n` never recompiles). An integer
`steps_per_execution` k gives k-step loops (k > 1) or single steps (k = 1);
"auto" measures:

1. single steps first: the first call is timed with its compile (the estimate
   of the loop's, `LOOP_COMPILE_FACTOR`), then bursts of about 20 ms give the
   per-step time;
2. on CPU (`weigh_compile`) the loop is compiled only if the steps left in the
   run (the `horizon`) could repay that compile, saving at most a single step
   per step; the single steps already run count too (ski rental: within 2x of
   the best choice known in hindsight). On accelerators the loop is compiled
   unless the single steps are device-bound (issued in under
   `DEVICE_BOUND_FRACTION` of their time: H200, a CIFAR ResNet, 0.1 of 6 ms);
3. the loop is compiled by a call running 0 steps ("warm"), timed like the
   single steps, and the faster is kept; a kept loop runs `k` steps per call,
   about `TARGET_CALL_SECONDS`, refined by the next two calls. With
   `static_loops` (accelerators) a settled loop runs as a static-length scan,
   for at most `MAX_STATIC_SIZES` sizes.

A burst timed while a program compiled in the background (or that compiled one)
shared the CPU with it: its time is only an upper bound. Such bursts are kept
apart; a timing with no trusted burst after `MAX_UNTRUSTED` of them decides
from their fastest, so a long background compile cannot keep the planner
timing every burst to the end of the pass.

Every program computes the same step, so the results are bit-identical whichever
ran a step (tests/trainers/test_fusion_callbacks.py). `describe()` says what was
chosen and why ("loopax" logger, debug level).

`StepBounds` is what the callbacks allow ("auto" only: an integer keeps Keras's
chunked hooks): one step per call while a callback needs every batch, and
executions ending at the multiples of each `batch_hooks_freq` (global training
steps). It depends on the callbacks only, never on timings.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from loopax.src.trainers.pass_kind import PREDICT, TRAIN

TARGET_CALL_SECONDS = 0.05
SINGLE_WORTH_SECONDS = 1e-3
MAX_HOST_CAPACITY = 64
MAX_STATIC_SIZES = 4
# A fused loop's compile time over its one-step program's (first call, trace included):
# bench/first_result.py's MLP, 0.61 s (loop) vs 0.85 s (step, under more load), 2-core CPU.
LOOP_COMPILE_FACTOR = 1.0
# Single steps whose calls are issued in under this share of their time run at
# the device's pace: a fused loop cannot make them faster (accelerators).
DEVICE_BOUND_FRACTION = 0.5
# Bursts timed under a background compile after which a timing decides from them.
MAX_UNTRUSTED = 3


class ExecutionPlanner:
    """Decides how many steps each compiled call runs (see the module docstring).

    Args:
        steps_per_execution: "auto" (measure) or a positive int (Keras's
            fixed chunking).
        static_loops: run settled loops as static-length scans.
        weigh_compile: compile a loop only if it can repay its compile (CPU);
            False compiles it whenever single steps have been timed.
        host: plans passes over host data, whose loops run stacked chunks
            (see `next`).
    """

    def __init__(self, steps_per_execution: int | str = "auto", static_loops: bool = False,
                 weigh_compile: bool = True, host: bool = False) -> None:
        if steps_per_execution == "auto":
            self.fixed = None
        elif (isinstance(steps_per_execution, (int, np.integer))
              and not isinstance(steps_per_execution, bool) and steps_per_execution >= 1):
            self.fixed = int(steps_per_execution)
        else:
            raise ValueError(f"`steps_per_execution` must be 'auto' or a positive integer, "
                             f"got {steps_per_execution!r}.")
        self.mode = None if self.fixed is None else ("loop" if self.fixed > 1 else "single")
        self.warmed = False
        self.loop = _Timing()
        self.single = _Timing()
        self.single_compiled = False
        self.single_compile_seconds: float | None = None
        self.horizon = 0
        self.single_steps_run = 0   # single steps run while no loop was compiled
        self.refinements = 0
        self.static_loops = static_loops
        self.weigh_compile = weigh_compile
        self.static_sizes: set[int] = set()
        self.host = host

    @property
    def loop_seconds(self) -> float | None:
        return self.loop.per_step

    @property
    def single_seconds(self) -> float | None:
        return self.single.per_step

    def next(self, remaining: int, horizon: int | None = None) -> tuple[str, int, bool]:
        """`(how, n, timed)` for the next execution ("warm": compile the loop, 0
        steps); `timed` asks the caller to report its duration to `record`.
        `horizon`: the steps left in the run (default `remaining`).

        Host data (`host`): the prefetch thread stacks the chunks ahead, so no loop
        is timed: single steps until one is timed, then, for steps under
        `SINGLE_WORTH_SECONDS`, loops over chunks of a power of two of batches
        lasting about `TARGET_CALL_SECONDS` (at most `MAX_HOST_CAPACITY`; `n` is
        the chunk's capacity, not bounded by `remaining`)."""
        if self.fixed is not None:
            mode = cast(str, self.mode)   # set with `fixed`
            return mode, min(self.fixed, remaining) if mode == "loop" else 1, False
        if self.host:
            per_step = self.single.per_step
            if per_step is None or per_step >= SINGLE_WORTH_SECONDS:
                return "single", 1, per_step is None and self.single_compiled
            k = TARGET_CALL_SECONDS / max(per_step, 1e-7)
            return "loop", int(min(MAX_HOST_CAPACITY, 2 ** max(0, round(math.log2(k))))), False
        self.horizon = remaining if horizon is None else horizon
        if not self.single_compiled:
            return "single", 1, True     # times the compile
        if not self.single.done:
            return "single", min(remaining, self.single.next_burst()), True
        if not self.warmed:
            if not self.loop_pays(self.horizon):
                n = max(1, min(remaining, self.k))
                self.single_steps_run += n
                return "single", n, False
            return "warm", 0, False
        if not self.loop.done:
            return "loop", min(remaining, self.loop.next_burst(self.single.per_step)), True
        n = max(1, min(remaining, self.k))
        mode = cast(str, self.mode)   # set when the loop was measured
        return mode, n, mode == "loop" and self.refinements < 2

    def loop_pays(self, horizon: int) -> bool:
        """Whether a fused loop could repay its estimated compile over `horizon`
        steps and the single steps already run for want of it (many short `fit()`
        calls get their loop once they have cost as much as compiling it)."""
        if not self.weigh_compile:
            return not self.device_bound
        steps = horizon + self.single_steps_run
        return self.single.per_step * steps > self.loop_compile_estimate

    @property
    def device_bound(self) -> bool:
        """Whether issuing the timed single steps (the host's work, which a loop
        removes) took under `DEVICE_BOUND_FRACTION` of their time."""
        issued, per_step = self.single.issued_per_step, self.single.per_step
        return issued is not None and per_step is not None and (
            issued < DEVICE_BOUND_FRACTION * per_step)

    @property
    def loop_compile_estimate(self) -> float:
        return LOOP_COMPILE_FACTOR * (self.single_compile_seconds or 0.0)

    @property
    def k(self) -> int:
        per_step = self.loop.per_step if self.mode == "loop" else self.single.per_step
        return max(1, int(TARGET_CALL_SECONDS / max(per_step or 1e-7, 1e-7)))

    def record(self, how: str, n: int, seconds: float | None,
               issued: float | None = None, trusted: bool = True) -> None:
        """Reports an execution of `n` steps: its time when timed, and for
        single steps the time their calls took to return (`issued`).
        `trusted=False`: a program compiled meanwhile (see the module docstring)."""
        if self.host:
            self.single_compiled = True
            if how == "single" and seconds is not None and n == 1:
                self.single.add(1, seconds, None, trusted, probe=False)
            return
        if how == "warm":
            self.warmed = True
        elif how == "loop" and seconds is not None:
            if not self.loop.done:
                self.loop.add(n, seconds, None, trusted)
                if self.loop.done:
                    self.mode = "loop" if self.loop.per_step < self.single.per_step else "single"
            else:
                self.refinements += 1
                if trusted:
                    self.loop.per_step = min(self.loop.per_step, seconds / n)
        elif how == "single" and seconds is not None:
            if not self.single_compiled:
                self.single_compiled = True
                self.single_compile_seconds = seconds
            elif not self.single.done:
                self.single.add(n, seconds, issued, trusted)
                if self.single.done and not self.loop_pays(self.horizon):
                    self.mode = "single"   # for now: a longer run may compile the loop
        elif how == "single":
            self.single_compiled = True

    @property
    def settled(self) -> bool:
        """Whether the mode and the chunk size will not change any more."""
        if self.host:
            return self.fixed is not None or self.single.per_step is not None
        return self.fixed is not None or (
            (self.mode == "single" and self.warmed)
            or (self.mode == "loop" and self.refinements >= 2))

    def static_size(self, n: int) -> bool:
        """Whether an `n`-step loop runs as a static-length scan; registers `n`."""
        if not self.static_loops or not self.settled:
            return False
        if n not in self.static_sizes and len(self.static_sizes) >= MAX_STATIC_SIZES:
            return False
        self.static_sizes.add(n)
        return True

    def describe(self) -> str:
        """What was chosen, from which timings (ms per step)."""
        def ms(t):
            return "not timed" if t is None else f"{t * 1e3:.3f} ms/step"
        if self.fixed is not None:
            how = (f"{self.fixed} steps per call (steps_per_execution={self.fixed})"
                   if self.mode == "loop" else "one step per call (steps_per_execution=1)")
            return how
        if self.mode is None:
            return "still measuring"
        single = f"single steps {ms(self.single.per_step)}"
        if self.single.from_untrusted:
            single += " (timed under a background compile)"
        if not self.warmed and self.device_bound and not self.weigh_compile:
            return (f"one step per call: {single}, issued in "
                    f"{ms(self.single.issued_per_step)}: the device sets the pace, a fused "
                    f"loop would not be faster")
        if not self.warmed:
            return (f"one step per call: {single}; a fused loop (compile about "
                    f"{self.loop_compile_estimate:.2f} s) would not pay off over "
                    f"{self.horizon} steps")
        loop = f"fused loop {ms(self.loop.per_step)}" + (
            " (timed under a background compile)" if self.loop.from_untrusted else "")
        chosen = (f"{self.k} steps per call" + (" (static-length scans)"
                                                  if self.static_loops else "")
                  if self.mode == "loop" else "one step per call")
        return f"{chosen}: {loop}, {single}"


class StepBounds:
    """Where executions may end, for one `fit`/`evaluate`/`predict` call.

    every_batch: every execution is one step;
    step_freqs: executions end at global steps that are multiples of these;
    sync: the Variables must hold the current values around batch hooks.
    """

    def __init__(self, needs, steps_per_execution="auto", kind=TRAIN):
        chosen = steps_per_execution == "auto"
        self.every_batch = chosen and bool(needs.every_batch)
        self.step_freqs = needs.step_freqs if chosen and kind.trains else ()
        self.sync = needs.sync and kind is not PREDICT   # predict changes no weights

    def limit(self, done: int, remaining: int) -> int:
        """The most steps (at most `remaining`) an execution may run once `done`
        global training steps have run (the run's `TrainingRun.steps_done` plus
        the pass's own)."""
        if self.every_batch:
            return 1
        room = min((freq - done % freq for freq in self.step_freqs), default=None)
        return remaining if room is None else min(room, remaining)


class _Timing:
    """Per-step time from bursts: a 1-step probe, then bursts of about 20 ms (a
    shorter one can be off by a time slice); done after such a burst, 3 bursts, or
    a step over 50 ms. The fastest trusted burst counts; with none after the
    probe, `MAX_UNTRUSTED` untrusted bursts (timed under a background compile)
    decide by their fastest, an upper bound."""

    def __init__(self):
        self.samples = []   # (steps, seconds, seconds to issue or None, trusted)
        self.per_step = None
        self.issued_per_step = None
        self.done = False
        self.from_untrusted = False   # decided from untrusted bursts

    def next_burst(self, estimate=None):
        if not self.samples and estimate is None:
            return 1
        per_step = (self.per_step if self.per_step is not None else
                    min(s / k for k, s, *_ in self.samples) if self.samples else estimate)
        return int(min(256, max(1, 0.02 / max(per_step, 1e-7))))

    def add(self, n, seconds, issued=None, trusted=True, probe=True):
        """Adds a burst; `probe`: the first one is a 1-step probe, which counts
        only while it is alone."""
        self.samples.append((n, seconds, issued, trusted))
        bursts = self.samples[1:] if probe and len(self.samples) > 1 else self.samples
        if trusted:
            self._per_step([b for b in bursts if b[3]])
            self.done = (seconds / n >= 0.05 or (len(self.samples) > 1 and seconds >= 0.015)
                         or len(self.samples) >= 4 or not probe)
        elif (sum(not b[3] for b in self.samples) >= MAX_UNTRUSTED
              and not any(b[3] for b in bursts)):   # decides from what it has
            self.from_untrusted = True
            self._per_step(self.samples)
            self.done = True

    def _per_step(self, timed):
        self.per_step = min(s / k for k, s, *_ in timed)
        issues = [i / k for k, _, i, _ in timed if i is not None]
        self.issued_per_step = min(issues) if issues else None
