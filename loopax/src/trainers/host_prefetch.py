"""`HostChunks`: data that is not on the device (generators, PyDatasets, loaders,
arrays too large), read by a background thread that groups up to `capacity`
consecutive batches of one shape, stacks them, puts them on the device and queues
them. The planner stays on the consuming thread and hands the thread each capacity
as a number; until it has settled, a chunk is built only once the consumer asks
for it, so the chunk sizes never depend on thread timing.
"""

from __future__ import annotations

import queue
import sys
import threading
from typing import Any, Iterator, NamedTuple

import jax
import numpy as np

from loopax.src.distribution import placement
from loopax.src.trainers.data_adapters.data_adapter_utils import shape_signature
from loopax.src.trainers.execution_planner import ExecutionPlanner, StepBounds
from loopax.src.trainers.padded_batches import pad_host_batch
from loopax.src.utils.interrupts import INTERRUPTS_HELD


class Chunk(NamedTuple):
    """What `HostChunks` yields: `steps` batches from step `first_step` on.

    stacked: `data` holds the batches stacked on a leading axis, padded to
    the chunk capacity (a "stacked" `StepProgram` runs `steps` of them);
    otherwise `data` is one batch (`steps` is 1).
    rows: for a smaller batch padded to the first batch's rows (`pad_rows`),
    its real rows; else None."""
    first_step: int
    steps: int
    data: Any
    stacked: bool
    rows: int | None = None


class HostChunks:
    """Iterates the `Chunk`s built on a background thread from `batches`
    (steps numbered from `first_step`, up to `max_steps`; the run had run
    `steps_before` global steps before step 0, for `bounds`)."""

    def __init__(self, batches: Iterator, max_steps: int | None, planner: ExecutionPlanner,
                 bounds: StepBounds,
                 stack: bool = True, depth: int = 2, to_device: bool = True, first_step: int = 0,
                 pad_rows: bool = False, steps_before: int = 0) -> None:
        self._batches = batches
        self._pad_rows = pad_rows   # a smaller batch is padded to the first one's rows
        self._first_step = first_step
        self._steps_before = steps_before
        self._max_steps = max_steps
        self._planner = planner
        self._bounds = bounds
        self._stack = stack
        self._to_device = to_device
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._capacities: queue.Queue = queue.Queue()   # (capacity, final), from the consumer
        self._final_capacity = None        # the thread's: once the planner settled it
        self._capacity_final_sent = not stack
        self._stop = threading.Event()
        self._hand_capacity()
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

    def _hand_capacity(self):
        """Consumer thread: the planner's capacity for the next chunk, to the thread."""
        if not self._capacity_final_sent:
            final = self._planner.settled
            how, n, _ = self._planner.next(sys.maxsize)   # the chunks' capacity
            self._capacities.put((n if how == "loop" else 1, final))
            self._capacity_final_sent = final

    def _next_capacity(self):
        """Producer thread: the capacity of the chunk it builds next."""
        if not self._stack:
            return 1
        if self._final_capacity is not None:
            return self._final_capacity
        while not self._stop.is_set():
            try:
                capacity, final = self._capacities.get(timeout=0.1)
            except queue.Empty:
                continue
            if final:
                self._final_capacity = capacity
            return capacity
        return 1

    def _device(self, tree, batch_axis=0):
        return placement.put_batch(tree, batch_axis) if self._to_device else tree

    def _produce(self):
        try:
            step = self._first_step
            pending = None
            main_signature = None
            iterator = iter(self._batches)
            while self._max_steps is None or step < self._max_steps:
                first = pending if pending is not None else next(iterator, None)
                pending = None
                if first is None:
                    break
                capacity = self._next_capacity()
                limit = self._bounds.limit(
                    self._steps_before + step,
                    capacity if self._max_steps is None else min(capacity, self._max_steps - step),
                )
                group = [first]
                signature = shape_signature(first)
                if main_signature is None:
                    main_signature = signature
                if signature != main_signature:
                    capacity = limit = 1   # an odd-shaped batch (the last, partial one) runs alone
                while len(group) < limit:
                    nxt = next(iterator, None)
                    if nxt is None:
                        break
                    if shape_signature(nxt) != signature:
                        pending = nxt
                        break
                    group.append(nxt)
                padded = (pad_host_batch(first, main_signature)
                          if self._pad_rows and signature != main_signature else None)
                if padded is not None:   # run by the full batches' program
                    item = Chunk(step, 1, self._device(padded[0]), stacked=False,
                                 rows=padded[1])
                elif capacity == 1:
                    item = Chunk(step, 1, self._device(first), stacked=False)
                else:
                    # Padded to `capacity` so every chunk has one shape (one compile).
                    padded = group + [group[-1]] * (capacity - len(group))
                    stacked = jax.tree_util.tree_map(lambda *a: np.stack(a), *padded)
                    item = Chunk(step, len(group), self._device(stacked, batch_axis=1),
                                 stacked=True)
                if not self._put(item):
                    return
                step += len(group)
            self._put(_END)
        except BaseException as error:  # handed to the consumer, raised there
            self._put(_Failed(error))

    def __iter__(self):
        first = True
        while True:
            if not first:   # the consumer ran (and timed) the last item
                self._hand_capacity()
            first = False
            item = self._queue.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item

    def close(self) -> None:
        """Stops the thread and drops the queued chunks. A Ctrl-C during the drop is
        held until it ends: freeing a chunk runs finalizers (weakref callbacks), where a
        KeyboardInterrupt would be printed as ignored and lost."""
        self._stop.set()
        with INTERRUPTS_HELD:
            try:
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass


_END = object()   # the producer's last item: no more batches


class _Failed(NamedTuple):
    """The producer's last item when reading or placing a batch raised."""
    error: BaseException

