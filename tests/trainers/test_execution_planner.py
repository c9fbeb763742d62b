"""The execution planner's decisions, from synthetic timings, and static-length
loops under fit() giving the weights of one step per call."""

import logging

import numpy as np
import pytest
from trainer_testlib import counted_mlp, mlp, regression_data

import loopax
from loopax.src.trainers import compiled_steps, execution_planner
from loopax.src.trainers.execution_planner import MAX_STATIC_SIZES, ExecutionPlanner
from loopax.src.trainers.pass_kind import TEST, TRAIN


def measure(planner, loop_seconds, single_seconds, remaining=10_000, compile_seconds=None,
            issue_seconds=None):
    """Drives an "auto" planner until its mode is chosen, answering every timed
    execution with the given per-step times (the first single call, which
    compiles, with `compile_seconds`; single steps' calls returning after
    `issue_seconds` per step). Returns the executions it asked for."""
    asked = []
    while planner.mode is None:
        how, n, timed = planner.next(remaining)
        asked.append((how, n))
        per_step = {"loop": loop_seconds, "single": single_seconds}.get(how)
        if how == "single" and len(asked) == 1 and compile_seconds is not None:
            per_step = compile_seconds
        issued = issue_seconds * n if how == "single" and issue_seconds and timed else None
        planner.record(how, n, per_step * n if timed and per_step is not None else None,
                       issued)
    return asked


def test_a_dispatch_bound_step_over_a_long_run_is_fused():
    planner = ExecutionPlanner("auto")
    asked = measure(planner, loop_seconds=2e-4, single_seconds=5e-4, compile_seconds=0.5)
    assert asked[0] == ("single", 1) and ("warm", 0) in asked   # 10,000 * 0.5 ms > 0.5 s
    assert planner.mode == "loop"
    assert planner.k == int(0.05 / 2e-4)          # one call lasts about 50 ms
    assert "250 steps per call" in planner.describe()
    assert "single steps 0.500 ms/step" in planner.describe()


@pytest.mark.parametrize("compile_s, horizon, fused", [
    (0.6, 225, False),     # bench/first_result.py's MLP epoch: 225 * 0.5 ms < 0.6 s
    (0.6, 1199, False),    # 1199 * 0.5 ms = 0.5995 s: just short of the compile
    (0.6, 1201, True),
    (3.0, 28, False),      # the convnet: 28 steps of 50 ms < a 3 s compile
], ids=["mlp-one-epoch", "just-short", "just-long-enough", "convnet-two-epochs"])
def test_a_loop_is_compiled_only_if_it_can_repay_its_compile(compile_s, horizon, fused):
    planner = ExecutionPlanner("auto")
    single = 0.05 if compile_s == 3.0 else 5e-4
    asked = measure(planner, loop_seconds=single / 2, single_seconds=single,
                    remaining=horizon, compile_seconds=compile_s)
    assert (("warm", 0) in asked) == fused
    assert planner.mode == ("loop" if fused else "single")
    if not fused:
        assert not planner.settled   # a longer run may still compile the loop
        assert f"would not pay off over {horizon} steps" in planner.describe()
        how, n, timed = planner.next(horizon, horizon=horizon)
        assert how == "single" and not timed


def test_a_longer_run_later_compiles_the_loop_a_short_one_declined():
    planner = ExecutionPlanner("auto")
    measure(planner, loop_seconds=1e-4, single_seconds=5e-4, remaining=100,
            compile_seconds=0.6)
    assert planner.mode == "single" and not planner.warmed
    assert planner.next(100, horizon=100_000) == ("warm", 0, False)
    planner.record("warm", 0, None)
    while planner.loop.done is False:
        how, n, timed = planner.next(100_000)
        assert how == "loop" and timed
        planner.record(how, n, 1e-4 * n)
    assert planner.mode == "loop" and "fused loop 0.100 ms/step" in planner.describe()


def test_many_short_runs_compile_the_loop_once_their_single_steps_cost_its_compile():
    """Ski rental: a model trained by repeated short fit() calls (a notebook's cells, a
    benchmark's rounds) gets its loop once the single steps run for want of it, plus the
    run's own steps, would have repaid the estimated compile (0.6 s = 1200 steps of
    0.5 ms) - not never, as when each run is judged alone."""
    planner = ExecutionPlanner("auto")
    measure(planner, loop_seconds=1e-4, single_seconds=5e-4, remaining=225,
            compile_seconds=0.6)
    untimed_singles = 0
    for _ in range(1000):
        how, n, timed = planner.next(225, horizon=225)   # a new 225-step fit() each time
        if how == "warm":
            break
        assert how == "single" and not timed
        planner.record(how, n, None)
        untimed_singles += n
    else:
        pytest.fail(f"no loop compiled after {untimed_singles} single steps")
    assert 1200 - 225 < untimed_singles <= 1200 - 225 + 225


@pytest.mark.parametrize("loop_ms, single_ms, chosen", [
    (7.5, 7.1, "single"),   # the H100 ResNet case: the loop body is 6% slower
    (7.1, 7.5, "loop"),
    (20.0, 5.0, "single"),  # convolutions in a CPU loop body
], ids=["single-6pct-faster", "loop-faster", "single-4x-faster"])
def test_a_compute_bound_step_takes_whichever_is_faster(loop_ms, single_ms, chosen):
    planner = ExecutionPlanner("auto")
    measure(planner, loop_seconds=loop_ms / 1e3, single_seconds=single_ms / 1e3,
            compile_seconds=1.0)
    assert planner.mode == chosen
    assert f"{single_ms:.3f} ms/step" in planner.describe()
    assert planner.settled == (chosen == "single")   # a loop is refined by 2 more calls


def test_a_fixed_steps_per_execution_is_obeyed_and_never_timed():
    planner = ExecutionPlanner(7)
    assert planner.next(100) == ("loop", 7, False)
    assert planner.next(3) == ("loop", 3, False)
    assert ExecutionPlanner(1).next(100) == ("single", 1, False)
    assert planner.settled and "steps_per_execution=7" in planner.describe()


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "fast", None],
                         ids=["zero", "negative", "float", "bool", "string", "none"])
def test_a_bad_steps_per_execution_is_named(bad):
    with pytest.raises(ValueError, match="steps_per_execution"):
        ExecutionPlanner(bad)


def test_static_sizes_wait_for_the_settled_plan_and_stay_bounded():
    planner = ExecutionPlanner("auto", static_loops=True)
    measure(planner, loop_seconds=2e-4, single_seconds=5e-4, compile_seconds=0.5)
    assert not planner.static_size(250)              # still refining k
    for _ in range(2):
        how, n, timed = planner.next(10_000)
        planner.record(how, n, 2e-4 * n if timed else None)
    assert planner.settled
    sizes = [250, 37, 250, 5, 6, 7, 8, 9, 37]
    used = [planner.static_size(n) for n in sizes]
    assert used == [True, True, True, True, True, False, False, False, True]
    assert len(planner.static_sizes) == MAX_STATIC_SIZES
    assert not ExecutionPlanner(7, static_loops=False).static_size(7)


# ---- under fit() ----------------------------------------------------------

class TracesPerEpoch(loopax.callbacks.Callback):
    """How often the model's Python `call` ran (= programs traced) in each epoch."""

    def __init__(self, counter):
        super().__init__()
        self.counter, self.per_epoch = counter, []

    def on_epoch_begin(self, epoch, logs=None):
        self.start = self.counter.runs

    def on_epoch_end(self, epoch, logs=None):
        self.per_epoch.append(self.counter.runs - self.start)


def fitted(spe, static, monkeypatch, epochs=2):
    """(weights, losses, traces per epoch) of a 2-epoch fit on 83 rows in batches of 8:
    10 full batches (chunks 4 + 4 + 2 with spe=4) and a partial batch of 3."""
    monkeypatch.setattr(compiled_steps, "STATIC_LOOPS", static)
    loopax.utils.set_random_seed(3)
    x, y = regression_data(n=83)
    model, counter = counted_mlp()
    model.compile(optimizer=loopax.optimizers.SGD(0.05), loss="mse", steps_per_execution=spe)
    traces = TracesPerEpoch(counter)
    history = model.fit(x, y, batch_size=8, epochs=epochs, verbose=0, callbacks=[traces])
    return [w.numpy() for w in model.weights], history.history["loss"], traces.per_epoch


def test_static_length_loops_train_like_one_step_per_call(monkeypatch):
    static, static_loss, static_traces = fitted(4, True, monkeypatch)
    single, single_loss, _ = fitted(1, False, monkeypatch)
    np.testing.assert_allclose(static_loss, single_loss, rtol=1e-6)
    for a, b in zip(static, single):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # Epoch 1 compiles a scan of 4, a scan of 2 and the partial batch's step;
    # epoch 2 reuses them all.
    _, _, dynamic_traces = fitted(4, False, monkeypatch)
    assert static_traces[1] == dynamic_traces[1] == 0
    assert static_traces[0] == dynamic_traces[0] + 1   # one program per size instead of one


def test_on_cpu_loops_keep_the_runtime_trip_count(monkeypatch):
    assert compiled_steps.static_loops_wanted() is False   # this suite runs on CPU
    _, _, default_traces = fitted(4, None, monkeypatch)
    _, _, dynamic_traces = fitted(4, False, monkeypatch)
    assert default_traces == dynamic_traces


def test_the_auto_choice_is_logged_at_debug_level(caplog, monkeypatch):
    monkeypatch.setattr(execution_planner, "LOOP_COMPILE_FACTOR", 0.0)   # a loop always pays
    loopax.utils.set_random_seed(0)
    x, y = regression_data(n=4096)
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    with caplog.at_level(logging.DEBUG, logger="loopax"):
        model.fit(x, y, batch_size=8, epochs=3, verbose=0)
    assert "fit() runs " in caplog.text and "steps per call: fused loop" in caplog.text


def test_a_short_fit_compiles_no_fused_loop():
    """Keras compiles one train step and one test step for a short run; so does
    loopax: 8 steps cannot repay a loop's compile (before: the loop was always
    compiled first, and timed)."""
    loopax.utils.set_random_seed(0)
    x, y = regression_data(n=64)
    model = mlp()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, validation_data=(x, y))
    engine = model._compiled_steps
    for kind in (TRAIN, TEST):
        assert engine.program(kind, "device", "dynamic").cache_size() == 0, kind
        assert sum(engine.program(kind).programs().values()) == 1, kind


def test_without_weighing_the_compile_a_short_run_still_compiles_and_times_the_loop():
    """Accelerators: the loop is compiled whenever single steps have been timed (the
    H100 bench: 54 us/step fused against 285 single, first epoch shorter than Keras's)."""
    planner = ExecutionPlanner("auto", weigh_compile=False)
    asked = measure(planner, loop_seconds=1e-4, single_seconds=5e-4, remaining=225,
                    compile_seconds=0.6)
    assert ("warm", 0) in asked and planner.mode == "loop"


def test_without_weighing_a_host_bound_step_gets_its_loop():
    """Issuing a single step takes most of its time (the host sets the pace): the
    loop, which removes that work, is compiled and timed."""
    planner = ExecutionPlanner("auto", weigh_compile=False)
    asked = measure(planner, loop_seconds=1e-4, single_seconds=5e-4, remaining=225,
                    compile_seconds=0.6, issue_seconds=4.5e-4)
    assert ("warm", 0) in asked and planner.mode == "loop"
    assert not planner.device_bound


def test_without_weighing_a_device_bound_step_never_compiles_a_loop():
    """Accelerators: single steps issued in a tenth of their time run at the device's
    pace, so a fused loop could save nothing: none is compiled, however long the run
    (the H200 ResNet bench: a first epoch of 12.7 s with the loop's compiles against
    2.3 s without, and no faster later)."""
    planner = ExecutionPlanner("auto", weigh_compile=False)
    asked = measure(planner, loop_seconds=5.9e-3, single_seconds=6e-3, remaining=100_000,
                    compile_seconds=2.0, issue_seconds=6e-4)
    assert planner.mode == "single" and ("warm", 0) not in asked
    for _ in range(3):
        how, n, timed = planner.next(100_000)
        assert how == "single" and not timed
        planner.record(how, n, None)
    assert planner.device_bound
    assert "the device sets the pace" in planner.describe()


def test_untrusted_bursts_decide_only_when_no_trusted_one_comes():
    """Bursts timed under a background compile (upper bounds): a trusted burst
    wins over them; with none, the fastest of `MAX_UNTRUSTED` decides."""
    planner = ExecutionPlanner("auto")
    planner.record("single", 1, 0.5)   # the compile
    for _ in range(execution_planner.MAX_UNTRUSTED - 1):
        how, n, timed = planner.next(10_000)
        assert (how, timed) == ("single", True)
        planner.record(how, n, 5e-4 * n, trusted=False)
    assert not planner.single.done
    how, n, _ = planner.next(10_000)
    assert n == 40   # a burst of 20 ms at the untrusted 0.5 ms/step
    planner.record(how, n, 1e-3 * n)   # trusted, slower than them: it ends the timing
    assert planner.single.done and planner.single.per_step == pytest.approx(1e-3)
    assert "background compile" not in planner.describe()

    stalled = ExecutionPlanner("auto")
    stalled.record("single", 1, 0.5)
    asked = []
    while stalled.mode is None and len(asked) < 20:
        how, n, timed = stalled.next(10_000)
        asked.append(how)
        per_step = {"single": 8e-4, "loop": 2e-4}.get(how)
        stalled.record(how, n, None if per_step is None else per_step * n, trusted=False)
    assert asked == ["single"] * 3 + ["warm"] + ["loop"] * 3
    assert stalled.mode == "loop" and stalled.single.per_step == pytest.approx(8e-4)
    assert "(timed under a background compile)" in stalled.describe()
