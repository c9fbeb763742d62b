"""Programs compiled ahead, in the background (#19): a pass's last, partial
batch and fit()'s validation batches get their one-step programs compiled
while earlier steps run, instead of by the call that first needs them; fit()'s
first training step's program is asked for first, so validation's compile
after it (and the main thread lowers them meanwhile). The
user sees the same numbers; only the first epoch's time changes."""

import threading
import types

import jax
import numpy as np
import pytest
from trainer_testlib import mlp, regression_data

import loopax
from loopax.src import compilation_cache
from loopax.src.trainers import epoch_runner, execution_planner, padded_batches, programs
from loopax.src.trainers.pass_kind import PREDICT, TEST, TRAIN


@pytest.fixture(params=[True, False], ids=["ahead", "by_call"])
def compile_ahead(request, monkeypatch):
    monkeypatch.setattr(programs, "COMPILE_AHEAD", request.param)
    return request.param


def fit_evaluate_predict():
    """60 training rows (7 batches of 8 and one of 4), 20 validation rows
    (2 of 8, one of 4), one-step calls throughout."""
    loopax.utils.set_random_seed(0)
    x, y = regression_data(n=80)
    model = mlp()
    model.compile(optimizer=loopax.optimizers.Adam(0.01), loss="mse", metrics=["mae"],
                  steps_per_execution=1)
    history = model.fit(x, y, batch_size=8, epochs=2, validation_split=0.25, verbose=0)
    evaluated = model.evaluate(x[:30], y[:30], batch_size=8, verbose=0)
    predicted = model.predict(x[:13], batch_size=8, verbose=0)
    return model, history.history, evaluated, predicted


def single_program(model, kind):
    return model._compiled_steps.program(kind)


def test_partial_and_validation_batches_are_compiled_ahead(compile_ahead, monkeypatch):
    # A model whose partial batches run padded has no programs of their own
    # (test_padded_batches.py); one that keeps a program per batch shape:
    monkeypatch.setattr(padded_batches, "PAD_PARTIAL_BATCHES", False)
    model, *_ = fit_evaluate_predict()
    programs = {kind: single_program(model, kind).programs() for kind in (TRAIN, TEST, PREDICT)}
    if compile_ahead:
        # Only predict's full batches compiled by a call; fit() asked for its first
        # training step's program, then validation's, before the first epoch (the
        # background compiler takes them in that order); the partial batches (4, 4,
        # 6, 5 rows) came from the background too.
        assert programs == {TRAIN: {"by_call": 0, "ahead": 2},
                            TEST: {"by_call": 0, "ahead": 3},
                            PREDICT: {"by_call": 1, "ahead": 1}}
    else:
        assert programs == {TRAIN: {"by_call": 2, "ahead": 0},
                            TEST: {"by_call": 3, "ahead": 0},
                            PREDICT: {"by_call": 2, "ahead": 0}}


def test_the_numbers_do_not_depend_on_where_programs_were_compiled(monkeypatch):
    results = {}
    for ahead in (True, False):
        monkeypatch.setattr(programs, "COMPILE_AHEAD", ahead)
        model, history, evaluated, predicted = fit_evaluate_predict()
        results[ahead] = (model.get_weights(), history, evaluated, predicted)
    (w1, h1, e1, p1), (w0, h0, e0, p0) = results[True], results[False]
    for a, b in zip(w1, w0):
        np.testing.assert_array_equal(a, b)
    assert h1 == h0 and e1 == e0
    np.testing.assert_array_equal(p1, p0)


def test_a_timing_that_is_not_the_steps_own_does_not_steer_the_planner():
    """The planner's timings: a background compile shares the CPU with the steps
    timed meanwhile, and an execution that compiled a program (a new batch shape)
    timed the compile; such times are dropped (the planner times again later).
    The first single step's time is its program's compile either way."""
    timed = types.SimpleNamespace(single_compiled=True)
    first = types.SimpleNamespace(single_compiled=False)
    release = threading.Event()
    blocker = programs.background_compiler().submit(release.wait)   # holds the queue
    program = programs.StepProgram(lambda state, batch: ({}, state + batch.sum()))
    program.compile_async(jax.ShapeDtypeStruct((), np.float32),
                          jax.ShapeDtypeStruct((4,), np.float32))
    try:
        assert programs.compiling_in_background()
        marks = epoch_runner._compile_marks()
        assert epoch_runner._planner_seconds(timed, "single", 0.01, lambda: 0.0, marks) is None
        assert epoch_runner._planner_seconds(timed, "loop", 0.01, lambda: 0.0, marks) is None
        assert epoch_runner._own_time(0.01, marks) is None   # a host-data step's timing

        def first_seconds(seconds, ahead, marks):
            return epoch_runner._planner_seconds(first, "single", seconds, lambda: ahead, marks)

        assert first_seconds(0.2, 0.5, marks) == pytest.approx(0.5)
        assert first_seconds(0.7, 0.5, marks) == pytest.approx(0.7)
        saved, compiled = marks
        assert first_seconds(0.2, 0.0, (saved - 0.3, compiled)) == pytest.approx(0.5)
    finally:
        release.set()
    blocker.result()
    program.ahead_seconds(jax.ShapeDtypeStruct((4,), np.float32))   # waits for its compile
    assert not programs.compiling_in_background()
    marks = epoch_runner._compile_marks()
    assert epoch_runner._planner_seconds(timed, "single", 0.01, lambda: 0.0, marks) == 0.01
    assert epoch_runner._own_time(0.01, marks) == 0.01
    jax.jit(lambda v: v * 3.0 + 1.0)(np.ones(7, np.float32))   # a program compiled here
    assert epoch_runner._planner_seconds(timed, "single", 0.2, lambda: 0.0, marks) is None
    assert epoch_runner._planner_seconds(timed, "loop", 0.2, lambda: 0.0, marks) is None
    assert epoch_runner._own_time(0.2, marks) is None


def test_evaluate_at_a_new_batch_size_times_its_steps_not_their_compile():
    """fit()'s validation compiled TEST's one-step program for 16 rows (one full
    batch: nothing else timed); evaluate() at 7 rows compiles another on its first
    call, which must not pass for a slow step: that made the planner compile a
    fused loop for an evaluate of 23 quick steps (the convnet of
    bench/first_result.py: 0.53 s instead of 0.15)."""
    loopax.utils.set_random_seed(0)
    x, y = regression_data(n=160)
    model = mlp()
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, batch_size=16, epochs=1, validation_split=0.15, verbose=0)   # 24 rows
    compiles = []

    def on_compile(event, seconds, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(on_compile)
    try:
        model.evaluate(x, y, batch_size=7, verbose=0)   # a shape no other test compiles
    finally:
        jax.monitoring.unregister_event_duration_listener(on_compile)
    samples = model._compiled_steps.planner(TEST, True, 7).single.samples
    assert compiles and samples
    # Each timed step is far quicker than the compile evaluate() ran first.
    trusted = [seconds / n for n, seconds, _, own in samples if own]
    assert trusted and max(trusted) < min(compiles) / 2, (samples, compiles)


def test_a_rerun_weighs_a_fused_loop_against_the_compile_not_the_cache_load(tmp_path):
    """A second, identical model loads its one-step program from the compilation
    cache: the planner still weighs a loop against a compile (the loop is not in the
    cache), not against the fraction of a second the load took."""
    def fit_once():
        loopax.utils.set_random_seed(0)
        x, y = regression_data(n=64)
        model = mlp()
        model.compile(optimizer="adam", loss="mse")
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        return model._compiled_steps.planner(TRAIN, True, 8).single_compile_seconds

    setting = jax.config.jax_compilation_cache_dir
    try:
        assert loopax.config.enable_compilation_cache(str(tmp_path))
        fit_once()
        jax.clear_caches()   # as in a new process: programs come from the disk
        estimate = fit_once()
        assert estimate >= 0.4   # stored as 0 whole seconds: about half a second
    finally:
        if setting is None:
            compilation_cache.disable_compilation_cache()
        else:
            compilation_cache.enable_compilation_cache(setting)


def test_a_timed_execution_starts_once_the_work_before_it_is_done():
    """Calls run asynchronously: a pass's first timed step waited for every step
    issued before it (validation's after the training epoch's: 1.4 s on a convnet,
    taken for a 1.4 s step), so the timer starts once the state is ready."""
    a = jax.device_put(np.ones((1500, 1500), np.float32) / 1500)
    pending = jax.jit(lambda m: m @ m @ m @ m @ m @ m @ m @ m)(a)   # issued, not waited for
    live = types.SimpleNamespace(values=([pending],))
    epoch_runner._start_timer(live, timed=True)
    assert pending.is_ready()


def held_background_compile():
    """A background compile kept in flight until the returned Event is set (the
    compiler's one thread waits on it first); fit's own programs then compile
    in the caller. Returns (release, finish), `finish()` waiting for it to end."""
    release = threading.Event()
    blocker = programs.background_compiler().submit(release.wait)
    held = programs.StepProgram(lambda state, batch: ({}, state + batch.sum()))
    spec = jax.ShapeDtypeStruct((4,), np.float32)
    held.compile_async(jax.ShapeDtypeStruct((), np.float32), spec)

    def finish():
        release.set()
        blocker.result()
        held.ahead_seconds(spec)

    return release, finish


def test_a_long_background_compile_does_not_keep_the_planner_measuring(monkeypatch):
    """Every burst timed under a background compile is untrusted; before, the
    planner dropped them and asked for another timed burst, to the pass's end
    ("still measuring", every step timed, no loop). Now it decides from the
    fastest of `MAX_UNTRUSTED` such bursts."""
    monkeypatch.setattr(execution_planner, "LOOP_COMPILE_FACTOR", 0.0)   # a loop always pays
    _, finish = held_background_compile()
    monkeypatch.setattr(programs, "COMPILE_AHEAD", False)
    try:
        loopax.utils.set_random_seed(0)
        x, y = regression_data(n=16384)
        model = mlp()
        model.compile(optimizer="sgd", loss="mse")
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        assert programs.compiling_in_background()   # all along the epoch
    finally:
        finish()
    planner = model._compiled_steps.planner(TRAIN, True, 8)
    assert planner.mode is not None, planner.describe()
    assert planner.warmed and planner.loop.done
    assert "timed under a background compile" in planner.describe()


def test_a_long_background_compile_does_not_keep_host_data_one_step_per_call(monkeypatch):
    """Host data: before, its single steps were timed one by one to the end (no
    trusted time, so no stacked chunks)."""
    _, finish = held_background_compile()
    monkeypatch.setattr(programs, "COMPILE_AHEAD", False)
    x, y = regression_data(n=512)

    def batches():
        for i in range(0, 512, 8):
            yield x[i:i + 8], y[i:i + 8]

    try:
        loopax.utils.set_random_seed(0)
        model = mlp()
        model.compile(optimizer="sgd", loss="mse")
        model.fit(batches(), epochs=1, steps_per_epoch=64, verbose=0)
        assert programs.compiling_in_background()
    finally:
        finish()
    planners = model._compiled_steps.planners.values()
    assert [p.single.per_step is not None for p in planners] == [True], planners
