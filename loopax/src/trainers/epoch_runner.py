"""One pass of the data over an engine's compiled steps (never the model).

`run_pass` runs a training, evaluation or prediction pass: its `Execution`s
(`executions()` over device data, `host_executions()` over prefetched host
chunks) on the `LiveState`, the batch hooks around each; predict's outputs are
concatenated at the end. `step_bounds`: what the callbacks allow.
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, cast

import jax
import numpy as np

from loopax.src.callbacks import progbar
from loopax.src.compilation_cache import compile_seconds_saved, programs_compiled
from loopax.src.distribution import placement
from loopax.src.trainers.execution_planner import ExecutionPlanner, StepBounds
from loopax.src.trainers.host_prefetch import HostChunks
from loopax.src.trainers.live_state import LiveState
from loopax.src.trainers.pass_kind import PREDICT
from loopax.src.trainers.programs import batch_of, batch_spec, compiling_in_background
from loopax.src.utils.interrupts import INTERRUPTS_HELD

if TYPE_CHECKING:
    from loopax.src.callbacks.callback import TrainingRun
    from loopax.src.callbacks.callback_list import CallbackList
    from loopax.src.trainers.compiled_steps import CompiledSteps
    from loopax.src.trainers.data_adapters.array_data_adapter import ArrayDataAdapter
    from loopax.src.trainers.data_adapters.data_adapter import DataAdapter
    from loopax.src.trainers.live_state import LiveState
    from loopax.src.trainers.pass_kind import PassKind
    from loopax.src.trainers.programs import StepProgram

_PREDICT_BUFFER_BYTES = 64 * 1024 ** 2
_MAX_PREDICT_CAPACITY = 128
_logger = logging.getLogger("loopax")


def step_bounds(engine: CompiledSteps, callbacks: CallbackList, kind: PassKind,
                say: bool = False) -> StepBounds:
    """The `StepBounds` of a `kind` pass under `callbacks`; when a callback makes
    steps run one per call, says why ("loopax" logger, debug; stdout too if `say`)."""
    needs = callbacks.batch_needs(kind)
    bounds = StepBounds(needs, engine.steps_per_execution, kind)
    if bounds.every_batch:
        message = f"{kind.caller}: {needs.reason()}"
        _logger.debug(message)
        if say:
            progbar._write(message + "\n")
    return bounds


class DataPosition:
    """Where `fit`'s epochs read the data when `steps_per_epoch` is less than its
    `num_batches`: as in Keras, an epoch goes on where the last stopped, and a new
    pass (a new order) starts once all batches were read, so an epoch can be short."""

    def __init__(self, num_batches, steps_per_epoch):
        self.continues = bool(num_batches and steps_per_epoch
                              and steps_per_epoch < num_batches)
        self.num_batches, self.steps_per_epoch = num_batches, steps_per_epoch
        self.batch = 0          # the next batch of the current pass over the data
        self.pass_epoch = 0     # the epoch that began it (its order's seed)
        self.short = False      # an epoch ran fewer than `steps_per_epoch` (warned once)

    def epoch(self, epoch: int) -> tuple[int, int, int]:
        """`(first batch, end batch, seed epoch)` of epoch `epoch`'s reads."""
        if not self.continues:
            return 0, self.steps_per_epoch, epoch
        if self.batch == 0:
            self.pass_epoch = epoch
        end = min(self.batch + self.steps_per_epoch, self.num_batches)
        if end - self.batch < self.steps_per_epoch and not self.short:
            self.short = True
            warnings.warn(
                f"fit(): steps_per_epoch={self.steps_per_epoch} does not divide the "
                f"{self.num_batches} batches of the data, so epoch {epoch + 1} runs only the "
                f"{end - self.batch} left before the data starts again (as in Keras). Pass a "
                f"steps_per_epoch that divides {self.num_batches}, or None for whole passes.",
                stacklevel=3)
        return self.batch, end, self.pass_epoch

    def advance(self, end: int) -> None:
        """Records that the epoch read up to batch `end`."""
        if self.continues:
            self.batch = 0 if end >= self.num_batches else end


def _shifted(hook, offset):
    """`hook` with batch numbers counted from `offset` (an epoch from 0, as Keras)."""
    if not offset:
        return hook
    return lambda step, *logs: hook(step - offset, *logs)


@INTERRUPTS_HELD.installed()   # each step's hand-over holds Ctrl-C (live_state.py)
def run_pass(engine: CompiledSteps, kind: PassKind, adapter: DataAdapter, live: LiveState,
             callbacks: CallbackList, seed: tuple[int, int] | None, max_steps: int | None,
             bounds: StepBounds, start_step: int = 0, later_passes: int = 0,
             data_start: int = 0, run: TrainingRun | None = None,
             compile_next: Callable[[], None] | None = None) -> Any:
    """Runs `kind` steps over one epoch of `adapter`, in executions within `bounds`,
    from batch `start_step` on (a resumed epoch), the batch hooks around each.
    `later_passes`: the passes of this kind the run makes after this one (the
    planner weighs a loop's compile against the steps left). `data_start`: the
    batch of the data the epoch starts at (`DataPosition`); `max_steps` then counts
    from the data's first batch. `run`: a training pass's `TrainingRun`, whose
    global step (`steps_done`) the executions' bounds count from and the pass
    advances. `compile_next`: fit's first epoch: the full batches' one-step program
    is compiled ahead too, then `compile_next()` asks for the next pass's
    (validation's), so the background compiler takes them in that order.
    Returns the last logs (device arrays), for PREDICT the outputs concatenated
    (NumPy), or None when no batch came."""
    predict = kind is PREDICT
    begin = _shifted(getattr(callbacks, kind.batch_begin), data_start)
    end = _shifted(getattr(callbacks, kind.batch_end), data_start)
    device = not engine.run_eagerly and adapter.fits_on_device()
    planner = engine.planner(kind, device, adapter.batch_size)
    engine.expect_batches(kind, adapter.partial_batch_size)
    single = engine.program(kind)
    start_step += data_start
    # Global steps before the data's first batch (the bounds count the epoch's own steps).
    steps_before = (0 if run is None else run.steps_done) - data_start
    if not predict:
        adapter.on_epoch_begin()
    loop: StepProgram | None
    if device:
        loop = engine.program(kind, "device", "dynamic")
        static_loop = engine.program(kind, "device", "static") if planner.static_loops else None
        order = None if predict else adapter.device_order(seed)
        data = adapter.device_data()
        if planner.mode is None:
            jax.block_until_ready((data, order))   # the transfer must not be timed as steps
        live.refresh()
        compile_ahead(engine, kind, cast("ArrayDataAdapter", adapter), live.values, max_steps,
                      full_batches=compile_next is not None)
        capacity = _predict_capacity(engine, adapter, max_steps, live, data) if predict else None
        source = executions(cast("ArrayDataAdapter", adapter), planner, bounds, max_steps,
                            start_step, None if predict else later_passes, capacity,
                            engine.pads_partial_batches(kind), data, order, steps_before)
        chunks = None
    else:
        loop = None if engine.run_eagerly or predict else \
            engine.program(kind, "stacked", "dynamic")
        static_loop, capacity = None, None
        chunks = HostChunks(
            adapter.host_batches(seed, start=start_step),
            max_steps if max_steps is not None else adapter.num_batches, planner, bounds,
            stack=loop is not None and not bounds.every_batch, to_device=not engine.run_eagerly,
            first_step=start_step, pad_rows=engine.pads_partial_batches(kind),
            steps_before=steps_before)
        source = host_executions(chunks, planner, engine.run_eagerly)
    if compile_next is not None:
        compile_next()
    out, pieces, reached = None, [], start_step
    programs = (single, loop, static_loop, planner, capacity)
    try:
        for execution in source:
            if execution.how == "warm":   # compiles the loop, runs no step
                live.refresh()
                _execute(execution, live, programs, predict)
                planner.record("warm", 0, None)
                continue
            if bounds.sync:
                live.write_back()
            begin(execution.first_step)
            live.refresh()
            marks = _compile_marks()
            out, seconds, issued = _execute(execution, live, programs, predict)
            if execution.planned:
                own = _planner_seconds(planner, execution.how, seconds,
                                       lambda: _ahead_seconds(single, execution), marks)
                _record(planner, kind, execution.how, execution.steps,
                        seconds if own is None else own, issued, own is not None)
            if bounds.sync:
                live.write_back()
            reached = execution.first_step + execution.steps
            if predict:
                pieces.append(out)
                end(reached - 1, {"outputs": out})
            else:
                end(reached - 1, out)
            if engine.stop_requested(kind):
                break
    finally:
        if chunks is not None:
            chunks.close()
    if not predict:
        adapter.on_epoch_end()
    if run is not None:
        run.steps_done = steps_before + reached   # `reached`: counted from the data's start
    if predict:
        return jax.tree_util.tree_map(lambda *a: np.concatenate(a, axis=0), *pieces) if (
            pieces) else None
    return out


def _start_timer(live, timed):
    """`time.perf_counter()` as an execution starts; a timed one waits first for the
    work issued before it (validation's first step timed the epoch's, 1.4 s)."""
    if timed:
        jax.block_until_ready(live.values)
    return time.perf_counter()


def _compile_marks():
    """Where this thread's compiles stand, before an execution (`_planner_seconds`)."""
    return compile_seconds_saved(), programs_compiled()


def _planner_seconds(planner, how, seconds, ahead_seconds, marks):
    """What a timed execution reports to the planner. The first single step: its
    program's compile (with the seconds the cache saved since `marks`, or the
    background compile's `ahead_seconds`). Others: `_own_time`."""
    if seconds is not None and how == "single" and not planner.single_compiled:
        return max(seconds + compile_seconds_saved() - marks[0], ahead_seconds())
    return _own_time(seconds, marks)


def _own_time(seconds, marks):
    """`seconds`, or None when the execution compiled or loaded a program since
    `marks` or a background compile ran as it ended (the planner is told the
    time as untrusted)."""
    if seconds is None or programs_compiled() != marks[1] or compiling_in_background():
        return None
    return seconds


def compile_ahead(engine: CompiledSteps, kind: PassKind, adapter: ArrayDataAdapter,
                  values: Any = None, max_steps: int | None = None,
                  full_batches: bool = False) -> None:
    """Starts compiling in the background the one-step programs a `kind` pass over
    `adapter`'s device-resident data will call: the last, partial batch's, and with
    `full_batches` the full batches' too. `values`: the state (None: the Variables')."""
    if engine.run_eagerly or not adapter.fits_on_device():
        return
    engine.expect_batches(kind, adapter.partial_batch_size)
    single = engine.program(kind)
    if values is None:
        values = LiveState.current_values(engine.state_groups(kind))
    data = adapter.device_data()
    steps = adapter.num_batches if max_steps is None else min(max_steps, adapter.num_batches)
    sizes = []
    if full_batches and adapter.num_full_batches and (engine.steps_per_execution in ("auto", 1)):
        sizes.append(adapter.batch_size)
    if adapter.partial_batch_size and steps == adapter.num_batches:
        if not engine.pads_partial_batches(kind):
            sizes.append(adapter.partial_batch_size)
        elif full_batches or not adapter.num_full_batches:   # padded: the full batches' program
            sizes.append(adapter.batch_size)
    for size in dict.fromkeys(sizes):
        single.compile_async(values, batch_spec(data, size))


def _record(planner, kind, how, n, seconds, issued=None, trusted=True):
    """Reports a timed execution to the planner; logs its choice when made."""
    before = (planner.mode, planner.loop.done)
    planner.record(how, n, seconds, issued, trusted)
    if planner.mode is not None and (planner.mode, planner.loop.done) != before:
        _logger.debug("%s runs %s", kind.caller, planner.describe())


class Execution(NamedTuple):
    """One compiled call (or a burst of one-step calls) of a pass: `how` ("warm",
    "loop", "single") `steps` from the epoch's batch `first_step`; for device data
    `row0` and `batch_size` (a partial batch's own, unless padded: `rows` real);
    `timed`/`planned`: report its time to the planner; `feed` as `StepProgram`'s
    ("device": `data` in `order`; "stacked"; "batch": `data` is one batch)."""
    how: str
    first_step: int
    steps: int
    row0: int
    batch_size: int | None
    timed: bool
    planned: bool
    rows: int | None = None
    feed: str = "device"
    data: Any = None
    order: Any = None


def executions(adapter: ArrayDataAdapter, planner: ExecutionPlanner, bounds: StepBounds,
               max_steps: int | None = None, start_step: int = 0,
               later_passes: int | None = None, capacity: int | None = None,
               pad_partial: bool = False, data: Any = None, order: Any = None,
               steps_before: int = 0) -> Iterator[Execution]:
    """One epoch of device-resident `data` (in `order`) as `Execution`s from batch
    `start_step` on, each run before the next is asked for. The planner sizes them
    over the full batches within `bounds`; the partial batch runs alone (padded
    with `pad_partial`). `later_passes`: passes to come (None: a loop's compile is
    not weighed); `capacity`: predict's most steps per call; `steps_before`: global
    steps before step 0."""
    size = adapter.batch_size
    steps = adapter.num_batches if max_steps is None else min(max_steps, adapter.num_batches)
    full = min(adapter.num_full_batches, steps)
    step = start_step
    while step < steps:
        planned = step < full and not bounds.every_batch
        if planned:
            horizon = None if later_passes is None else full - step + later_passes * full
            how, n, timed = planner.next(bounds.limit(steps_before + step, full - step),
                                         horizon=horizon)
            if capacity is not None:
                n = min(n, capacity)
        else:   # every batch alone, or the last, partial batch (its own shape)
            how, n, timed = "single", 1, False
        rows = None
        if step < full:
            batch_size, row0 = size, step * size
        elif pad_partial:   # the last, partial batch, through the full batches' program
            batch_size, row0, rows = size, full * size, adapter.partial_batch_size
        else:   # the last, partial batch: compiled once
            batch_size, row0 = adapter.partial_batch_size, full * size
        yield Execution(how, step, n, row0, batch_size, timed, planned, rows, "device", data,
                        order)
        if how != "warm":
            step += n


def host_executions(chunks: HostChunks, planner: ExecutionPlanner,
                    eager: bool = False) -> Iterator[Execution]:
    """Host data's `Execution`s: stacked chunks as loops, single batches alone."""
    for chunk in chunks:
        if chunk.stacked:
            yield Execution("loop", chunk.first_step, chunk.steps, 0, None, False, False,
                            feed="stacked", data=chunk.data)
        else:
            timed = not eager and planner.next(1)[2]
            yield Execution("single", chunk.first_step, 1, 0, None, timed, True, chunk.rows,
                            "batch", to_jax(chunk.data) if eager else chunk.data)


def _execute(execution, live, programs, predict):
    """Runs `execution` on the live state: (logs or predict's host outputs, seconds
    when timed, seconds the one-step calls took to return when timed). A loop that
    may not fuse (`StepProgram.may_fuse`) runs as one-step calls."""
    single, loop, static_loop, planner, capacity = programs
    how, n, data = execution.how, execution.steps, execution.data
    fused = None
    if how != "single" and execution.feed == "stacked":
        fused, args, kwargs = loop, (data, n), {}
    elif how != "single":
        fused = (static_loop if how == "loop" and static_loop is not None
                 and planner.static_size(n) else loop)
        args = (data, execution.order, execution.row0, n)
        kwargs = {"batch_size": execution.batch_size}
        if predict:
            kwargs["capacity"] = capacity
    if fused is not None and not fused.may_fuse(live.values, *args, **kwargs):
        fused = None   # its steps as one-step calls (programs.cpu_rules)
    if how == "warm":
        if fused is not None:
            live.call(fused, *args, **kwargs)
        return None, None, None
    start = _start_timer(live, execution.timed)
    issued = None
    if fused is not None:
        out = live.call(fused, *args, **kwargs)
        if predict:
            out = jax.tree_util.tree_map(lambda a: a[:n].reshape((-1,) + a.shape[2:]),
                                         placement.to_host(out))
    else:
        outs = [live.call(single, _batch(execution, j), rows=execution.rows)
                for j in range(n)]
        if how == "single":
            issued = time.perf_counter() - start
        out = outs[-1]
        if predict:
            out = jax.tree_util.tree_map(lambda *a: np.concatenate(a, axis=0),
                                         *placement.to_host(outs))
            if execution.rows is not None:   # a padded batch: its real rows' outputs
                out = jax.tree_util.tree_map(lambda a: a[:execution.rows], out)
    if not execution.timed:
        return out, None, None
    jax.block_until_ready(out)
    return out, time.perf_counter() - start, issued


def _batch(execution, j):
    """The `j`-th batch of `execution`, for a one-step program."""
    if execution.feed == "device":
        return batch_of(execution.data, execution.order,
                        execution.row0 + j * execution.batch_size, execution.batch_size,
                        execution.rows)
    if execution.feed == "stacked":
        return jax.tree_util.tree_map(lambda a: a[j], execution.data)
    return execution.data


def _ahead_seconds(single, execution):
    if execution.feed != "device":
        return 0.0
    return single.ahead_seconds(batch_spec(execution.data, execution.batch_size))


def _predict_capacity(engine, adapter, max_steps, live, data):
    """The most steps one predict call runs (its output buffer: `_PREDICT_BUFFER_BYTES`)."""
    steps = adapter.num_batches if max_steps is None else min(max_steps, adapter.num_batches)
    full, size = min(adapter.num_full_batches, steps), adapter.batch_size
    spe = engine.steps_per_execution
    if spe != "auto":
        return max(1, min(int(spe), full))
    if full == 0:
        return 1
    step, _, _ = engine.value_step(PREDICT)
    batch = jax.tree_util.tree_map(
        lambda a: jax.ShapeDtypeStruct((size,) + tuple(a.shape[1:]), a.dtype), data)
    spec, _ = jax.eval_shape(step, live.values, batch)
    nbytes = sum(int(np.prod(s.shape)) * np.dtype(s.dtype).itemsize
                 for s in jax.tree_util.tree_leaves(spec))
    return max(1, min(full, _MAX_PREDICT_CAPACITY, _PREDICT_BUFFER_BYTES // max(nbytes, 1)))


def to_jax(tree: Any) -> Any:
    """NumPy leaves as JAX arrays (for eager steps and model building)."""
    return jax.tree_util.tree_map(
        lambda a: jax.device_put(a) if isinstance(a, np.ndarray) else a, tree)
