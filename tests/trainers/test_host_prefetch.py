"""HostChunks: the chunk sizes the prefetch thread builds do not depend on
thread timing (the planner is read and written by the consuming thread only)."""

import signal
import sys
import time

import numpy as np
import pytest

from loopax.src.callbacks.callback_list import BatchNeeds
from loopax.src.trainers.execution_planner import MAX_HOST_CAPACITY, ExecutionPlanner, StepBounds
from loopax.src.trainers.host_prefetch import HostChunks

BATCHES = 12
STEP_SECONDS = 1e-4   # the timed step: short, so later chunks are stacked


def _batches(pause):
    for i in range(BATCHES):
        time.sleep(pause)
        yield np.full((2, 3), i, np.float32)


def _layout(producer_pause, consumer_pause):
    """(kind, first step, steps) of each chunk, the consumer timing the steps
    as epoch_runner does: the first call compiles, the second is timed."""
    planner = ExecutionPlanner("auto", host=True)
    chunks = HostChunks(_batches(producer_pause), BATCHES, planner,
                        StepBounds(BatchNeeds(), "auto"), to_device=False)
    layout = []
    try:
        for chunk in chunks:
            if chunk.stacked:
                layout.append(("stacked", chunk.first_step, chunk.steps))
            else:
                layout.append(("single", chunk.first_step, chunk.steps))
                timed = planner.next(1)[2]
                time.sleep(consumer_pause)
                planner.record("single", 1, STEP_SECONDS if timed else None)
    finally:
        chunks.close()
    return layout


@pytest.mark.parametrize("producer_pause, consumer_pause", [
    (0.03, 0.0), (0.0, 0.03), (0.0, 0.0)], ids=["slow-data", "slow-steps", "both-fast"])
def test_chunk_sizes_do_not_depend_on_thread_timing(producer_pause, consumer_pause):
    timed = ExecutionPlanner("auto", host=True)
    timed.record("single", 1, STEP_SECONDS)
    how, capacity, _ = timed.next(1)
    assert how == "loop"
    stacked = min(capacity, MAX_HOST_CAPACITY, BATCHES - 2)
    # Step 0 compiles, step 1 is timed, then the planner's capacity from step 2 on.
    expected = [("single", 0, 1), ("single", 1, 1), ("stacked", 2, stacked)]
    assert _layout(producer_pause, consumer_pause) == expected


class _InterruptedWhenFreed:
    """A batch whose finalizer meets a Ctrl-C (SIGINT raised as it is freed), as a
    weakref callback run by freeing a chunk can."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)


def test_a_ctrl_c_while_close_drops_the_queue_is_raised_not_lost():
    """The old close() let the KeyboardInterrupt land inside the finalizer, where Python
    prints 'Exception ignored' and drops it: the Ctrl-C was lost."""
    def batches():
        yield _InterruptedWhenFreed()
        yield np.zeros((2, 3), np.float32)

    planner = ExecutionPlanner("auto", host=True)
    chunks = HostChunks(batches(), 2, planner, StepBounds(BatchNeeds(), "auto"), stack=False,
                        to_device=False)
    deadline = time.monotonic() + 30
    while chunks._queue.qsize() < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert chunks._queue.qsize() == 2
    unraisable = []
    previous, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        with pytest.raises(KeyboardInterrupt):
            chunks.close()
    finally:
        sys.unraisablehook = previous
    assert not unraisable, [u.exc_value for u in unraisable]
