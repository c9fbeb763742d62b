"""How an epoch is cut into compiled calls, and host batches prefetched for them.

`ExecutionPlanner` decides how each call runs: "loop" (`n` steps fused in one
compiled loop) or "single" (one step, no loop). With an integer
`steps_per_execution` k it is k-step loops (k > 1) or single steps (k = 1).
With "auto" it measures:

1. the loop is compiled by a call running 0 steps, then timed on 1 step;
2. a step under `SINGLE_WORTH_SECONDS` is dispatch-bound: the loop wins and
   `k` is chosen so one call lasts about `TARGET_CALL_SECONDS` (long enough
   that the per-call cost disappears, short enough for a lively progress
   bar), refined by the next timed calls;
3. a longer step is compute-bound: the single step is compiled and timed
   too, and the faster one is kept (XLA on CPU runs convolutions several
   times slower inside a loop body than at top level; with steps this long,
   asynchronous dispatch hides the per-step cost of single steps anyway).

The device loop takes `n` at run time, so changing `k` never recompiles.

`HostChunks` serves data that is not on the device (generators, PyDatasets,
loaders, arrays too large for the device) from a background thread: it groups
up to `capacity` consecutive batches of the same shape, stacks them, puts them
on the device and queues them, so the device never waits for the host.
"""

from __future__ import annotations

import math
import queue
import threading

import jax
import numpy as np

TARGET_CALL_SECONDS = 0.05
SINGLE_WORTH_SECONDS = 5e-4
MAX_HOST_CAPACITY = 64


class ExecutionPlanner:
    def __init__(self, steps_per_execution="auto"):
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
        self.loop_seconds = None      # per step, in a loop
        self.single_seconds = None    # per step, alone
        self.single_calls = 0
        self.refinements = 0

    def next(self, remaining: int):
        """`(how, n, timed)` for the next call: how is "warm" (compile the loop,
        0 steps), "loop" or "single"; `timed` asks the caller to wait for the
        call and report its duration to `record`."""
        if self.fixed is not None:
            return (self.mode, min(self.fixed, remaining) if self.mode == "loop" else 1, False)
        if self.mode == "single":
            return "single", 1, False
        if not self.warmed:
            return "warm", 0, False
        if self.loop_seconds is None:
            return "loop", 1, True
        if self.mode is None:          # a long step: compare with a single step
            return "single", 1, self.single_calls > 0
        return "loop", max(1, min(remaining, self.k)), self.refinements < 2

    @property
    def k(self) -> int:
        return int(TARGET_CALL_SECONDS / max(self.loop_seconds, 1e-7))

    def record(self, how: str, n: int, seconds: float | None):
        if how == "warm":
            self.warmed = True
        elif how == "single":
            self.single_calls += 1
            if seconds is not None:
                self.single_seconds = seconds
                self.mode = "single" if seconds <= self.loop_seconds else "loop"
        elif how == "loop" and seconds is not None:
            if self.loop_seconds is None:
                self.loop_seconds = seconds / n
                if self.loop_seconds < SINGLE_WORTH_SECONDS:
                    self.mode = "loop"
            else:
                self.refinements += 1
                self.loop_seconds = seconds / n

    # ---- host data: stacked chunks --------------------------------------------
    def host_next(self):
        """`(capacity, timed)` for host data: single steps until one is timed,
        then stacked chunks of `capacity` batches if steps are short."""
        if self.fixed is not None:
            return self.fixed, False
        if self.single_seconds is None:
            return 1, self.single_calls > 0
        if self.single_seconds >= SINGLE_WORTH_SECONDS:
            return 1, False
        k = TARGET_CALL_SECONDS / max(self.single_seconds, 1e-7)
        return int(min(MAX_HOST_CAPACITY, 2 ** max(0, round(math.log2(max(k, 1)))))), False

    def host_record(self, n, seconds):
        self.single_calls += 1
        if seconds is not None and n == 1:
            self.single_seconds = seconds

    def capacity(self) -> int:
        """Batches per stacked host chunk (read by the prefetch thread)."""
        return self.host_next()[0]


class HostChunks:
    """Iterates `("stacked", first_step, n, data)` and `("single", step, batch)`
    items built on a background thread from `batches` (at most `max_steps`)."""

    def __init__(self, batches, max_steps, planner: ExecutionPlanner, stack=True,
                 depth=2, to_device=True):
        self._batches = batches
        self._max_steps = max_steps
        self._planner = planner
        self._stack = stack
        self._to_device = to_device
        self._queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, daemon=True,
                                        name="loopax-prefetch")
        self._thread.start()

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _device(self, tree):
        return jax.device_put(tree) if self._to_device else tree

    def _produce(self):
        try:
            step = 0
            pending = None
            main_signature = None
            iterator = iter(self._batches)
            while self._max_steps is None or step < self._max_steps:
                first = pending if pending is not None else next(iterator, None)
                pending = None
                if first is None:
                    break
                capacity = self._planner.capacity() if self._stack else 1
                limit = capacity if self._max_steps is None else min(
                    capacity, self._max_steps - step)
                group = [first]
                signature = _signature(first)
                if main_signature is None:
                    main_signature = signature
                if signature != main_signature:
                    capacity = limit = 1   # an odd-shaped batch (the last, partial one) runs alone
                while len(group) < limit:
                    nxt = next(iterator, None)
                    if nxt is None:
                        break
                    if _signature(nxt) != signature:
                        pending = nxt
                        break
                    group.append(nxt)
                if capacity == 1:
                    item = ("single", step, self._device(first))
                else:
                    # Padded to `capacity` so every chunk has one shape (one compile).
                    padded = group + [group[-1]] * (capacity - len(group))
                    stacked = jax.tree_util.tree_map(lambda *a: np.stack(a), *padded)
                    item = ("stacked", step, len(group), self._device(stacked))
                if not self._put(item):
                    return
                step += len(group)
            self._put(("end", step, None))
        except BaseException as error:  # handed to the consumer, raised there
            self._put(("error", None, error))

    def __iter__(self):
        while True:
            item = self._queue.get()
            kind = item[0]
            if kind == "end":
                return
            if kind == "error":
                raise item[2]
            yield item

    def close(self):
        self._stop.set()
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass


def _signature(batch):
    leaves, treedef = jax.tree_util.tree_flatten(batch)
    return treedef, tuple((tuple(np.shape(a)), str(getattr(a, "dtype", type(a)))) for a in leaves)
