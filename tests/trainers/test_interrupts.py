"""Ctrl-C at any point of fit / evaluate / predict leaves a model that works.

A real SIGINT (`signal.raise_signal`: Python's handler runs at once) is sent
at one point of the run, then the next, and so on over every point: each
line the main thread runs in the step loop's modules and in the callbacks'
code, and the moment each compiled call returns (before the caller records
its outputs: the call has donated, i.e. deleted, its input buffers). After
each interrupt the model must hold a consistent state: the weights of the
step its optimizer's iteration counter says (a NumPy SGD run gives them),
and `predict` and a further `fit` must work from there.

The model is linear (Dense, MSE, plain SGD), so every state is a closed form.
"""

import functools
import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest

import loopax as keras
from loopax.src.trainers import epoch_runner, host_prefetch, live_state, trainer
from loopax.src.trainers.programs import StepProgram
from loopax.src.utils import interrupts

LEARNING_RATE = 0.1
BATCH = 4
EPOCHS = 2
_RNG = np.random.default_rng(0)
X = _RNG.normal(size=(10, 3)).astype("float32")
Y = _RNG.normal(size=(10, 2)).astype("float32")


def _sgd_step(kernel, bias, x, y):
    """One SGD step on mean((x @ kernel + bias - y) ** 2), in float64."""
    error = x @ kernel + bias - y
    scale = 2.0 / error.size
    return (kernel - LEARNING_RATE * scale * x.T @ error,
            bias - LEARNING_RATE * scale * error.sum(axis=0))


def _trajectory(kernel, bias, rows):
    """The weights after 0, 1, ... steps of EPOCHS epochs on X[:rows] in order
    (shuffle=False; the last batch may be partial)."""
    states = [(kernel, bias)]
    for _ in range(EPOCHS):
        for start in range(0, rows, BATCH):
            end = min(start + BATCH, rows)
            states.append(_sgd_step(*states[-1], X[start:end].astype(np.float64),
                                    Y[start:end]))
    return states


class _Batches(keras.utils.PyDataset):
    """X[:rows], Y[:rows] in order, from the host (the prefetch-thread path)."""

    def __init__(self, rows):
        super().__init__()
        self.rows = rows

    def __len__(self):
        return -(-self.rows // BATCH)

    def __getitem__(self, i):
        end = min((i + 1) * BATCH, self.rows)
        return X[i * BATCH:end], Y[i * BATCH:end]


class _BatchHooks(keras.callbacks.Callback):
    """A callback with batch hooks: the Variables are synced around each batch."""

    def on_train_batch_begin(self, batch, logs=None):
        self.seen = batch

    def on_train_batch_end(self, batch, logs=None):
        self.seen = batch

    on_test_batch_begin = on_predict_batch_begin = on_train_batch_begin
    on_test_batch_end = on_predict_batch_end = on_train_batch_end


class _Interrupter:
    """Counts the points of a run and raises SIGINT at point number `at`.

    A point is a line run by a function of FILES, or the return of a compiled
    call. A line that a function call already ran counts again only once a
    compiled call has returned since: every line of every step, but a loop
    over the Variables (write_back, refresh) counts its first pass only.

    `counted`: the counting run of the same action (the run is deterministic).
    Tracing costs ~3x the run, so with it the run is traced only from the last
    compiled call's return before point `at` (the count there is known from
    `counted`; from a compiled call's return on, the count does not depend on
    the lines before); `fired_where` is where the SIGINT went, which the test
    compares with the counting run's `trail` to see that it is point `at`.
    """

    FILES = {module.__file__ for module in (epoch_runner, live_state, host_prefetch,
                                            trainer)} | {__file__}

    def __init__(self, at=None, counted=None):
        self.at, self.points, self.fired, self.active = at, 0, False, False
        self.calls = 0      # compiled calls returned
        self._seen = {}     # frame -> {(line, calls)} (frames kept alive: unique keys)
        self.trail = []     # where each point was: (calls, file, function, line)
        self.fired_where = None
        self.points_at_call = [0]   # points counted when compiled call i returned
        self._trace_from_call = 0   # tracing starts when this many compiled calls returned
        if counted is not None:
            self._trace_from_call = max(
                i for i, points in enumerate(counted.points_at_call) if points < at)
            self.points = counted.points_at_call[self._trace_from_call]

    def point(self, where):
        if not self.active:
            return
        self.points += 1
        if self.at is None:
            self.trail.append(where)
        elif self.points == self.at:
            self.fired, self.fired_where = True, where
            signal.raise_signal(signal.SIGINT)

    def compiled_call_returned(self):
        if not self.active:
            return
        self.calls += 1
        if self.calls < self._trace_from_call:
            return
        if self.calls == self._trace_from_call:
            self._start_tracing(sys._getframe(1))   # count from here on (known so far)
            return
        self.point((self.calls, "compiled call returned"))
        self.points_at_call.append(self.points)

    def _start_tracing(self, frame):
        """Traces the rest of the run, also the lines left in the FILES frames running
        inside `run` (not those around it, which a full trace does not trace either)."""
        sys.settrace(self._calls)
        while frame is not None and frame.f_code is not _Interrupter.run.__code__:
            if self._calls(frame, "call", None) is not None:
                frame.f_trace = self._lines
            frame = frame.f_back

    def _lines(self, frame, event, arg):
        if event == "line":
            seen = self._seen.setdefault(frame, set())
            if (frame.f_lineno, self.calls) not in seen:
                seen.add((frame.f_lineno, self.calls))
                code = frame.f_code
                self.point((self.calls, os.path.basename(code.co_filename), code.co_name,
                            frame.f_lineno))
        return self._lines

    def _calls(self, frame, event, arg):
        code = frame.f_code
        if code.co_filename not in self.FILES or code in _INTERRUPTER_CODE:
            return None
        return self._lines

    def run(self, action):
        """`action()` with a SIGINT at point `at`; whether it was interrupted."""
        self.active = True
        if self._trace_from_call == 0:
            sys.settrace(self._calls)
        try:
            action()
        except KeyboardInterrupt:
            return True
        finally:
            sys.settrace(None)
            self.active = False
        return False


_INTERRUPTER_CODE = {f.__code__ for f in vars(_Interrupter).values() if callable(f)}


def _points_after_compiled_calls(model, interrupter, monkeypatch):
    """Makes the return of each compiled call a point of `interrupter`."""
    compiled = StepProgram.__call__

    def call(self, *args, **kwargs):
        out = compiled(self, *args, **kwargs)
        interrupter[0].compiled_call_returned()
        return out

    monkeypatch.setattr(StepProgram, "__call__", call)


def _model(steps_per_execution):
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE), loss="mse",
                  steps_per_execution=steps_per_execution)
    return model


def _fit_arrays(rows, **kwargs):
    return lambda model, folder: model.fit(X[:rows], Y[:rows], batch_size=BATCH, epochs=EPOCHS,
                                   shuffle=False, verbose=0, **kwargs)


def _fit_pydataset(rows, **kwargs):
    return lambda model, folder: model.fit(_Batches(rows), epochs=EPOCHS, shuffle=False, verbose=0,
                                   **kwargs)


def _batch_hooks(folder):
    return [_BatchHooks()]


def _saving_every_step(folder):
    return [keras.callbacks.ModelCheckpoint(os.path.join(folder, "checkpoint.weights.h5"),
                                            save_weights_only=True, save_freq=1)]


def _fit_arrays_with(*callbacks):
    """fit on X[:8] with the callbacks each of `callbacks(folder)` makes."""
    return lambda model, folder: model.fit(
        X[:8], Y[:8], batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
        callbacks=[callback for make in callbacks for callback in make(folder)])


# name: (steps_per_execution, rows of X trained on, the run). 10 rows make batches of
# 4, 4 and 2 (the partial batch has its own compiled step); 8 rows two full batches.
# Only training donates its input buffers; the other runs are checked all the same.
# A callback with batch hooks and a save every step run together in one case: its points
# are those of each alone (test_one_run_passes_the_points_of_each_callback_alone): 946
# points in place of 928 + 943, each a run and a predict/fit check.
RUNS = {
    "fit-arrays-batch-callback-and-saving-every-step": (
        1, 8, _fit_arrays_with(_batch_hooks, _saving_every_step)),
    "fit-arrays-two-steps-per-call": (2, 10, _fit_arrays(10)),
    "fit-pydataset-batch-callback": (1, 8, _fit_pydataset(8, callbacks=[_BatchHooks()])),
    "fit-pydataset-two-steps-per-call": (2, 10, _fit_pydataset(10)),
    "evaluate-arrays-batch-callback": (1, 10, lambda m, folder: m.evaluate(
        X, Y, batch_size=BATCH, verbose=0, callbacks=[_BatchHooks()])),
    "predict-arrays-two-steps-per-call": (2, 10, lambda m, folder: m.predict(
        X, batch_size=BATCH, verbose=0)),
    "predict-pydataset-batch-callback": (1, 8, lambda m, folder: m.predict(
        _Batches(8), verbose=0, callbacks=[_BatchHooks()])),
    "train-on-batch": (1, 4, lambda m, folder: m.train_on_batch(X[:BATCH], Y[:BATCH])),
}


def _check_consistent(model, states):
    """The weights are those of the step the optimizer counted; predict and fit work."""
    assert all(np.isfinite(v) for v in model.get_metrics_result().values())
    kernel, bias = model.get_weights()
    steps = int(np.asarray(model.optimizer.iterations))
    want_kernel, want_bias = states[steps]
    np.testing.assert_allclose(kernel, want_kernel, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bias, want_bias, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(X, verbose=0), X @ want_kernel + want_bias,
                               rtol=1e-5, atol=1e-5)
    model.fit(X[:BATCH], Y[:BATCH], batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    next_kernel, next_bias = _sgd_step(want_kernel, want_bias, X[:BATCH].astype(np.float64),
                                       Y[:BATCH])
    np.testing.assert_allclose(model.get_weights()[0], next_kernel, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.get_weights()[1], next_bias, rtol=1e-5, atol=1e-6)


@pytest.fixture
def folder(tmp_path):
    """A folder for the checkpoints, in memory (/dev/shm) where there is one: on a disk a
    save's fsync and rename take most of its ~10 ms, and the saving case saves up to 4
    times in each of its ~950 runs. Where the file lands changes no point (the save's
    own lines are not points)."""
    if not os.path.isdir("/dev/shm"):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir="/dev/shm") as in_memory:
        yield Path(in_memory)


@pytest.mark.parametrize("run", list(RUNS))
def test_ctrl_c_at_every_point_leaves_a_working_model(run, monkeypatch, folder):
    steps_per_execution, rows, action = RUNS[run]
    model = _model(steps_per_execution)
    initial = model.get_weights()
    states = _trajectory(*(w.astype(np.float64) for w in initial), rows)
    current = [_Interrupter()]
    _points_after_compiled_calls(model, current, monkeypatch)
    action(model, folder)   # compiles; the next run counts the points
    model.set_weights(initial)
    model.optimizer.iterations.assign(0)
    counted = current[0]
    run_once = functools.partial(action, model, folder)   # one callable: the same points
    assert not counted.run(run_once)
    total = counted.points
    assert total > 20
    for at in range(1, total + 1):
        model.set_weights(initial)
        model.optimizer.iterations.assign(0)
        current[0] = _Interrupter(at, counted)
        interrupted = current[0].run(run_once)
        assert interrupted == current[0].fired, f"point {at} of {total}"
        assert current[0].fired_where == counted.trail[at - 1], f"point {at} of {total}"
        try:
            _check_consistent(model, states)
        except Exception as error:
            raise AssertionError(f"{run}: after a Ctrl-C at point {at} of {total}: "
                                 f"{type(error).__name__}: {error}") from error


def _counted_points(model, initial, action, folder, interrupter):
    """The points of one run of `action` (compiled already) from the `initial` weights."""
    model.set_weights(initial)
    model.optimizer.iterations.assign(0)
    interrupter[0] = _Interrupter()
    assert not interrupter[0].run(functools.partial(action, model, folder))
    return interrupter[0].trail


def test_one_run_passes_the_points_of_each_callback_alone(monkeypatch, folder):
    """The merged case interrupts at every point where a run with only the batch hooks,
    or only the save every step, would be interrupted: the same lines of the step
    loop's modules and of the hooks, after the same number of compiled calls (the
    actions' own lines aside)."""
    model = _model(1)
    initial = model.get_weights()
    interrupter = [_Interrupter()]
    _points_after_compiled_calls(model, interrupter, monkeypatch)
    hooks_only, saving_only = _fit_arrays_with(_batch_hooks), _fit_arrays_with(_saving_every_step)
    merged = RUNS["fit-arrays-batch-callback-and-saving-every-step"][2]
    hooks_only(model, folder)   # compiles
    points = {}
    for name, action in [("hooks", hooks_only), ("saving", saving_only), ("merged", merged)]:
        points[name] = {where for where in _counted_points(model, initial, action, folder,
                                                            interrupter)
                        if where[1] != os.path.basename(__file__)
                        or where[2] in ("on_train_batch_begin", "on_train_batch_end")}
    assert any("on_train_batch_end" in where for where in points["hooks"])
    assert points["hooks"] != points["saving"]   # each alone passes points the other does not
    assert points["hooks"] <= points["merged"], sorted(points["hooks"] - points["merged"])
    assert points["saving"] <= points["merged"], sorted(points["saving"] - points["merged"])


class _Received:
    """A SIGINT handler that records each signal (the handler a block holds back)."""

    def __init__(self, events):
        self.events = events

    def __call__(self, signum, frame):
        self.events.append("signal")


def _held_block(events):
    with interrupts.INTERRUPTS_HELD:
        with interrupts.INTERRUPTS_HELD:   # blocks nest
            events.append("inner")
        events.append("outer")


def _held_loop(events):
    with interrupts.INTERRUPTS_HELD.installed():
        _held_block(events)
        events.append("between")
        _held_block(events)


@pytest.mark.parametrize("run", [_held_block, _held_loop], ids=["block", "installed-loop"])
def test_a_held_ctrl_c_is_delivered_once_whenever_it_lands(run, monkeypatch):
    """A SIGINT at each line of INTERRUPTS_HELD's own code (and of the blocks) reaches
    the handler exactly once, never in the middle of a block, and the handler is
    back in place afterwards."""
    events = []
    handler = _Received(events)
    monkeypatch.setattr(_Interrupter, "FILES", {interrupts.__file__, __file__})
    previous = signal.signal(signal.SIGINT, handler)
    try:
        counting = _Interrupter()
        counting.run(lambda: run(events))
        expected = list(events)
        assert counting.points > 10
        for at in range(1, counting.points + 1):
            events.clear()
            _Interrupter(at).run(lambda: run(events))
            assert events.count("signal") == 1, (at, events)
            where = events.index("signal")
            assert events[:where] + events[where + 1:] == expected, (at, events)
            assert events[where - 1:where] in ([], ["outer"], ["between"]), (at, events)
            assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_held_ctrl_c_raises_keyboard_interrupt_after_the_block():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.INTERRUPTS_HELD:
            signal.raise_signal(signal.SIGINT)
            done.append("rest of the block")
    assert done == ["rest of the block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_outside_the_main_thread_a_block_runs_as_it_is():
    def run():
        with interrupts.INTERRUPTS_HELD:
            seen.append(signal.getsignal(signal.SIGINT))
    seen = []
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]


# ---- Ctrl-C inside the callbacks that save ------------------------------------------

def _continued(state, rows, epochs=EPOCHS):
    """The weights after `epochs` more epochs of SGD on X[:rows] from `state`."""
    for _ in range(epochs):
        for start in range(0, rows, BATCH):
            end = min(start + BATCH, rows)
            state = _sgd_step(*state, X[start:end].astype(np.float64), Y[start:end])
    return state


def _backup_and_restore(folder):
    return keras.callbacks.BackupAndRestore(os.path.join(folder, "backup"))


def _checkpoint_each_step(folder):
    return keras.callbacks.ModelCheckpoint(os.path.join(folder, "last.keras"), save_freq=1)


@pytest.mark.parametrize("make_callback", [_backup_and_restore, _checkpoint_each_step],
                         ids=["backup-and-restore", "model-checkpoint"])
def test_ctrl_c_at_every_line_of_a_saving_callback_then_resuming(make_callback, monkeypatch,
                                                                 folder):
    """A SIGINT at each line the main thread runs in BackupAndRestore, ModelCheckpoint
    and their stores (and at each compiled call's return), then the run again with the
    same callback, as a user reruns the cell: the model is consistent after the
    interrupt, and the rerun ends where SGD says (with BackupAndRestore: the
    uninterrupted run's weights, from the backup or from the start) with the folder
    free for the next fit. Each line is interrupted at its first run (a loop over the
    Variables repeats lines a thousand times), each compiled call's return every time;
    the step loop's own lines are the other tests' points."""
    from loopax.src.callbacks import backup_and_restore, model_checkpoint
    from loopax.src.saving import checkpoint, model_file, weights_file
    files = {module.__file__ for module in (backup_and_restore, model_checkpoint, checkpoint,
                                            model_file, weights_file)}
    monkeypatch.setattr(_Interrupter, "FILES", files)
    rows = 8
    model = _model(1)
    initial = model.get_weights()
    states = _trajectory(*(w.astype(np.float64) for w in initial), rows)
    current = [_Interrupter()]
    _points_after_compiled_calls(model, current, monkeypatch)

    def fit(callback):
        model.fit(X[:rows], Y[:rows], batch_size=BATCH, epochs=EPOCHS, shuffle=False,
                  verbose=0, callbacks=[callback])

    def reset():
        model.set_weights(initial)
        model.optimizer.iterations.assign(0)
        for path in os.listdir(folder):
            full = os.path.join(folder, path)
            os.remove(full) if os.path.isfile(full) else shutil.rmtree(full)

    fit(make_callback(folder))   # compiles
    reset()
    callback = make_callback(folder)
    counted = current[0]
    assert not counted.run(functools.partial(fit, callback))
    total = counted.points
    firsts = {}
    for at, where in enumerate(counted.trail, start=1):
        firsts.setdefault(where[1:] if len(where) > 2 else where, at)
    callback_file = os.path.basename(sys.modules[type(callback).__module__].__file__)
    assert sum(key[0] == callback_file for key in firsts) > 20
    for at in sorted(firsts.values()):
        reset()
        callback = make_callback(folder)
        current[0] = _Interrupter(at, counted)
        interrupted = current[0].run(functools.partial(fit, callback))
        where = f"after a Ctrl-C at point {at} of {total} ({current[0].fired_where})"
        assert interrupted == current[0].fired, where
        steps = int(np.asarray(model.optimizer.iterations))
        try:
            kernel, bias = model.get_weights()
            np.testing.assert_allclose(kernel, states[steps][0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(bias, states[steps][1], rtol=1e-5, atol=1e-6)
            fit(callback)                     # the rerun, same callback
            resumed = int(np.asarray(model.optimizer.iterations))
            if resumed == len(states) - 1:    # from a backup (or the start)
                want = states[-1]
            else:                             # no backup: on from where it stopped
                assert resumed == steps + len(states) - 1, (steps, resumed)
                want = _continued(states[steps], rows)
            kernel, bias = model.get_weights()
            np.testing.assert_allclose(kernel, want[0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(bias, want[1], rtol=1e-5, atol=1e-6)
            fit(make_callback(folder))        # the folder was released
        except Exception as error:
            raise AssertionError(f"{where}: {type(error).__name__}: {error}") from error
