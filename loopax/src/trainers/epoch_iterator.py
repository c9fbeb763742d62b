"""How an epoch is cut into compiled calls, and host batches prefetched for them.

`ExecutionPlanner` decides how many steps each compiled call runs. With an
integer `steps_per_execution` it is that number. With "auto" it times the
first calls (the first one compiles, so it runs a single step) and then picks
`k` so that one call lasts about `TARGET_CALL_SECONDS`: long enough that the
per-call cost (dispatch, callbacks, progress bar) disappears, short enough for
a lively progress bar. The device loop takes `k` at run time, so changing it
never recompiles.

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
        self.calls = 0
        self.seconds_per_step = None
        self.host_capacity = self.fixed

    @property
    def calibrating(self) -> bool:
        """Whether the next call should be timed (the trainer then waits for it)."""
        return self.fixed is None and self.calls < 3

    def size(self, remaining: int) -> int:
        """Steps for the next call, at most `remaining`."""
        if self.fixed is not None:
            return min(self.fixed, remaining)
        if self.calls == 0:
            return 1
        if self.seconds_per_step is None:
            return min(4, remaining)
        k = int(TARGET_CALL_SECONDS / max(self.seconds_per_step, 1e-7))
        return max(1, min(remaining, k))

    def record(self, n: int, seconds: float | None):
        """Notes a finished call of `n` steps that took `seconds` (None: not timed)."""
        self.calls += 1
        if seconds is not None and self.calls > 1:
            self.seconds_per_step = seconds / n
            if self.host_capacity is None and self.calls >= 3:
                k = TARGET_CALL_SECONDS / max(self.seconds_per_step, 1e-7)
                self.host_capacity = int(min(MAX_HOST_CAPACITY,
                                             2 ** max(0, round(math.log2(max(k, 1))))))

    def capacity(self) -> int:
        """Batches per stacked host chunk (1 until calibrated)."""
        return self.host_capacity or 1


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
