"""The engine (`CompiledSteps`) runs a hand-written step over arrays, with no
Model: compile(), the runner and the planner need only a `StepSource`."""

import jax.numpy as jnp
import numpy as np
import pytest

from loopax.src.callbacks.callback import TrainingRun
from loopax.src.callbacks.callback_list import BatchNeeds, CallbackList
from loopax.src.state import Variable
from loopax.src.trainers import epoch_runner
from loopax.src.trainers.compiled_steps import CompiledSteps
from loopax.src.trainers.data_adapters import ArrayDataAdapter
from loopax.src.trainers.execution_planner import StepBounds
from loopax.src.trainers.live_state import LiveState
from loopax.src.trainers.pass_kind import TRAIN

ROWS, BATCH = 22, 4   # 5 full batches and a partial one of 2 rows


class RunningSum:
    """A `StepSource` whose step adds each batch's sum to a total and counts steps;
    `stop_after`: the executions after which a batch hook would have asked to stop."""

    def __init__(self, stop_after=None):
        self.total = Variable(np.float32(0.0))
        self.count = Variable(np.int32(0))
        self.stop_after = stop_after
        self.executions = 0

    def value_step(self, kind, example_batch):
        def step(state, batch):
            (total, count), = state
            total, count = total + jnp.sum(batch), count + 1
            return {"total": total, "count": count}, ([total, count],)
        return step, [[self.total, self.count]], "stateless"

    def finalize_logs(self, kind):
        return lambda logs, state: logs

    def stop_requested(self, kind):
        self.executions += 1   # asked once after each execution
        return self.stop_after is not None and self.executions >= self.stop_after


def run_one_pass(source, steps_per_execution):
    engine = CompiledSteps(source, steps_per_execution)
    x = np.arange(ROWS * 3, dtype=np.float32).reshape(ROWS, 3) / 7
    adapter = ArrayDataAdapter(x, batch_size=BATCH)
    live = LiveState(engine.state_groups(TRAIN))
    bounds = StepBounds(BatchNeeds(), steps_per_execution, TRAIN)
    run = TrainingRun(live.groups, None)
    logs = epoch_runner.run_pass(engine, TRAIN, adapter, live, CallbackList(), None, None,
                                 bounds, run=run)
    live.write_back()
    return engine, x, logs, run


@pytest.mark.parametrize("steps_per_execution", [1, 4], ids=["one-step-calls", "fused-by-4"])
def test_engine_runs_a_hand_written_step_over_every_batch(steps_per_execution):
    source = RunningSum()
    engine, x, logs, run = run_one_pass(source, steps_per_execution)
    assert int(source.count.value) == -(-ROWS // BATCH) == 6
    np.testing.assert_allclose(float(source.total.value), float(x.sum()), rtol=1e-6)
    assert float(logs["total"]) == float(source.total.value)
    assert run.steps_done == 6   # the run's global step, advanced by the pass
    fused = engine.program(TRAIN, "device", "dynamic")
    assert fused.cache_size() == (1 if steps_per_execution > 1 else 0)


def test_fused_and_one_step_calls_give_the_same_bits():
    one, fused = RunningSum(), RunningSum()
    run_one_pass(one, 1)
    run_one_pass(fused, 4)
    assert np.asarray(one.total.value).tobytes() == np.asarray(fused.total.value).tobytes()


def test_the_pass_ends_when_its_source_asks_to_stop():
    source = RunningSum(stop_after=2)
    run_one_pass(source, 1)
    assert int(source.count.value) == 2
