"""Callback-aware fusion: under the default steps_per_execution="auto", what a
callback sees and what the model learns are those of steps_per_execution=1
(and of Keras, which runs one step per call); an explicit integer keeps
Keras's chunked hooks."""

import contextlib
import logging
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trainer_testlib import Snapshot, mlp, regression_data

import loopax
from loopax.src.trainers import execution_planner

BATCH = 8


class Hooks:
    """The batch hooks a framework's callback records: (hook, index), and the
    loss each `*_batch_end` got."""

    def __init__(self, base, batch_hooks=None, batch_hooks_freq=None):
        calls, losses = [], []
        attributes = {}
        for hook in ("on_train_batch_begin", "on_train_batch_end", "on_test_batch_begin",
                     "on_test_batch_end", "on_predict_batch_begin", "on_predict_batch_end"):
            def record(self, batch, logs=None, hook=hook):
                calls.append((hook, batch))
                if hook.endswith("end") and "loss" in (logs or {}):
                    losses.append(float(logs["loss"]))
            attributes[hook] = record
        if batch_hooks is not None:
            attributes["batch_hooks"] = batch_hooks
            attributes["batch_hooks_freq"] = batch_hooks_freq
        self.callback = type("Recorder", (base,), attributes)()
        self.calls, self.losses = calls, losses

    def ends(self, hook="on_train_batch_end"):
        return [index for name, index in self.calls if name == hook]


@contextlib.contextmanager
def loop_compile_factor(factor):
    """The planner's loop-compile estimate scaled by `factor` (0: a fused loop
    always pays; huge: never), restored after."""
    saved = execution_planner.LOOP_COMPILE_FACTOR
    execution_planner.LOOP_COMPILE_FACTOR = factor
    try:
        yield
    finally:
        execution_planner.LOOP_COMPILE_FACTOR = saved


def keras_or_skip():
    os.environ.setdefault("KERAS_BACKEND", "jax")
    return pytest.importorskip("keras")


def keras_model(keras):
    inputs = keras.Input(shape=(3,))
    h = keras.layers.Dense(4, activation="tanh")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1)(h))


@pytest.fixture(scope="module")
def setup():
    """One compiled model (restored between runs) and 64 samples: 8 batches."""
    loopax.utils.set_random_seed(0)
    x, y = regression_data()
    model = mlp()
    model.compile(optimizer=loopax.optimizers.SGD(0.05), loss="mse")
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    return model, Snapshot(model), x, y


def run(setup, spe, callbacks, epochs=2, **kwargs):
    model, snapshot, x, y = setup
    snapshot.restore()
    model.steps_per_execution = spe
    try:
        model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0, shuffle=False,
                  callbacks=callbacks, **kwargs)
    finally:
        model.steps_per_execution = "auto"
    return model.get_weights()


def keras_fit_hooks(keras, x, y, spe, epochs=2):
    keras.utils.set_random_seed(0)
    model = keras_model(keras)
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", steps_per_execution=spe)
    hooks = Hooks(keras.callbacks.Callback)
    model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0, shuffle=False,
              callbacks=[hooks.callback])
    return hooks


def test_batch_hooks_see_every_batch_as_with_one_step_per_execution_and_keras(setup):
    fused, single = Hooks(loopax.callbacks.Callback), Hooks(loopax.callbacks.Callback)
    fused_weights = run(setup, "auto", [fused.callback])
    single_weights = run(setup, 1, [single.callback])
    assert fused.calls == single.calls
    assert len(fused.ends()) == 16    # 8 batches x 2 epochs
    np.testing.assert_allclose(fused.losses, single.losses, rtol=1e-6)
    for a, b in zip(fused_weights, single_weights):
        np.testing.assert_allclose(a, b, atol=1e-6)
    keras = keras_or_skip()
    _, _, x, y = setup
    assert fused.calls == keras_fit_hooks(keras, x, y, 1).calls


def test_explicit_steps_per_execution_calls_hooks_once_per_execution_as_keras(setup):
    keras = keras_or_skip()
    _, _, x, y = setup
    hooks = Hooks(loopax.callbacks.Callback)
    run(setup, 4, [hooks.callback])
    assert hooks.calls == keras_fit_hooks(keras, x, y, 4).calls
    assert hooks.ends() == [3, 7, 3, 7]
    # 8 batches in executions of 3: the same calls, except that the last one
    # ends at the last batch (7) where Keras 3.15 says 8, a batch that is not there.
    hooks = Hooks(loopax.callbacks.Callback)
    run(setup, 3, [hooks.callback])
    theirs = keras_fit_hooks(keras, x, y, 3)
    assert hooks.ends("on_train_batch_begin") == theirs.ends("on_train_batch_begin")
    assert hooks.ends() == [2, 5, 7, 2, 5, 7]
    assert theirs.ends() == [2, 5, 8, 2, 5, 8]


class WarmUp(loopax.callbacks.Callback):
    """Learning rate rising linearly over the first 12 steps, set per batch."""

    def __init__(self):
        super().__init__()
        self.step = 0

    def on_train_batch_begin(self, batch, logs=None):
        self.step += 1
        self.model.optimizer.learning_rate.assign(0.05 * min(1.0, self.step / 12))


def test_learning_rate_warm_up_gives_the_weights_of_one_step_per_execution(setup):
    fused = run(setup, "auto", [WarmUp()])
    single = run(setup, 1, [WarmUp()])
    before = setup[1].weights
    assert not np.allclose(fused[0], before[0])   # it trained
    for a, b in zip(fused, single):
        np.testing.assert_allclose(a, b, atol=1e-6)
    setup[0].optimizer.learning_rate.assign(0.05)


def test_save_freq_5_over_40_batches_writes_8_checkpoints_as_keras(setup, tmp_path):
    model, snapshot, _, _ = setup
    x, y = regression_data(n=160)   # 20 batches x 2 epochs
    snapshot.restore()
    chunked = Hooks(loopax.callbacks.Callback, batch_hooks="chunked")
    pattern = "ckpt-{epoch}-{batch:02d}.weights.h5"
    checkpoint = loopax.callbacks.ModelCheckpoint(str(tmp_path / "ours" / pattern),
                                                  save_weights_only=True, save_freq=5)
    model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, callbacks=[checkpoint, chunked.callback])
    ours = sorted(os.listdir(tmp_path / "ours"))
    assert len(ours) == 8
    # Executions end at every multiple of 5, and fusion stays on between them.
    assert set(range(4, 20, 5)) <= set(chunked.ends())
    assert len(chunked.ends()) < 40
    keras = keras_or_skip()
    keras.utils.set_random_seed(0)
    theirs_model = keras_model(keras)
    theirs_model.compile(optimizer="sgd", loss="mse")
    theirs_model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, callbacks=[
        keras.callbacks.ModelCheckpoint(str(tmp_path / "theirs" / pattern),
                                        save_weights_only=True, save_freq=5)])
    assert ours == sorted(os.listdir(tmp_path / "theirs"))


class StopAt(loopax.callbacks.Callback):
    def __init__(self, batch, flag="stop_training", hook="on_train_batch_end"):
        super().__init__()
        self.batch, self.flag = batch, flag
        setattr(self, hook, self._maybe_stop)

    def _maybe_stop(self, batch, logs=None):
        if batch == self.batch:
            setattr(self.model, self.flag, True)


def test_stop_training_in_a_batch_hook_stops_at_that_batch(setup):
    model, snapshot, _, _ = setup
    snapshot.restore()
    before = int(model.optimizer.iterations.value)
    hooks = Hooks(loopax.callbacks.Callback, batch_hooks="async")
    run(setup, "auto", [StopAt(3), hooks.callback])
    assert int(model.optimizer.iterations.value) - before == 4
    assert hooks.ends() == [0, 1, 2, 3]   # and no further batch in the second epoch


def test_evaluate_and_predict_hooks_see_every_batch_and_stop_where_told(setup):
    model, _, x, y = setup
    seen = {}
    for spe in ("auto", 1):
        model.steps_per_execution = spe
        hooks = Hooks(loopax.callbacks.Callback)
        model.evaluate(x, y, batch_size=BATCH, verbose=0, callbacks=[hooks.callback])
        model.predict(x, batch_size=BATCH, verbose=0, callbacks=[hooks.callback])
        seen[spe] = hooks.calls
    model.steps_per_execution = "auto"
    assert seen["auto"] == seen[1]
    assert [i for _, i in seen["auto"]] == [i for i in range(8) for _ in (0, 1)] * 2
    counted = Hooks(loopax.callbacks.Callback, batch_hooks="async")
    model.evaluate(x, y, batch_size=BATCH, verbose=0, callbacks=[
        StopAt(3, "stop_evaluating", "on_test_batch_end"), counted.callback])
    model.predict(x, batch_size=BATCH, verbose=0, callbacks=[
        StopAt(3, "stop_predicting", "on_predict_batch_end"), counted.callback])
    assert counted.ends("on_test_batch_end") == [0, 1, 2, 3]
    assert counted.ends("on_predict_batch_end") == [0, 1, 2, 3]


def test_the_callback_that_reduces_fusion_is_named(setup, caplog, capsys):
    with caplog.at_level(logging.DEBUG, logger="loopax"):
        run(setup, "auto", [WarmUp()], epochs=1)
    assert "WarmUp.on_train_batch_begin" in caplog.text
    assert "batch_hooks" in caplog.text
    model, snapshot, x, y = setup
    snapshot.restore()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=2, callbacks=[WarmUp()])
    assert "WarmUp.on_train_batch_begin needs every batch" in capsys.readouterr().out
    model.optimizer.learning_rate.assign(0.05)


@settings(max_examples=6, deadline=None)
@given(modes=st.lists(st.tuples(st.sampled_from(["every", "chunked", "async"]),
                                st.one_of(st.none(), st.integers(2, 7))),
                      min_size=1, max_size=3),
       epochs=st.integers(1, 2), loop_pays=st.booleans())
def test_fused_runs_learn_and_show_what_single_steps_do(setup, modes, epochs, loop_pays):
    """For random callback sets, whether or not the planner finds a fused loop
    worth compiling: the same weights as steps_per_execution=1; callbacks that
    need every batch see the same hooks; those with a `batch_hooks_freq` see
    every one of its multiples."""
    runs = {}
    for spe in ("auto", 1):
        recorders = [Hooks(loopax.callbacks.Callback, mode, freq) for mode, freq in modes]
        with loop_compile_factor(0.0 if loop_pays else 1e9):
            weights = run(setup, spe, [r.callback for r in recorders], epochs=epochs)
        runs[spe] = (weights, recorders)
    for a, b in zip(runs["auto"][0], runs[1][0]):
        np.testing.assert_allclose(a, b, atol=1e-6)
    for (mode, freq), fused, single in zip(modes, runs["auto"][1], runs[1][1]):
        if mode == "every":
            assert fused.calls == single.calls
        ends = fused.ends()
        epoch_of = np.cumsum([0] + [1 if b <= a else 0 for a, b in zip(ends, ends[1:])])
        global_ends = {8 * e + i + 1 for e, i in zip(epoch_of, ends)}
        if freq is not None:
            assert set(range(freq, 8 * epochs + 1, freq)) <= global_ends


class Batches:
    """Host data: re-iterable batches of 8 (a fresh pass each epoch)."""

    def __init__(self, x, y):
        self.batches = [(x[i:i + BATCH], y[i:i + BATCH]) for i in range(0, len(x), BATCH)]

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        return iter(self.batches)


def test_host_data_obeys_the_callbacks_too(setup):
    model, snapshot, x, y = setup
    runs = {}
    for spe in ("auto", 1):
        snapshot.restore()
        model.steps_per_execution = spe
        every = Hooks(loopax.callbacks.Callback)
        model.fit(Batches(x, y), epochs=2, verbose=0, callbacks=[every.callback])
        runs[spe] = (every.calls, model.get_weights())
    model.steps_per_execution = "auto"
    assert runs["auto"][0] == runs[1][0]
    for a, b in zip(runs["auto"][1], runs[1][1]):
        np.testing.assert_allclose(a, b, atol=1e-6)
    snapshot.restore()
    every3 = Hooks(loopax.callbacks.Callback, batch_hooks="chunked", batch_hooks_freq=3)
    model.fit(Batches(x, y), epochs=2, verbose=0, callbacks=[every3.callback])
    # Global steps 3, 6, ..., 15 are the ends of batches 2, 5 (epoch 0), 0, 3, 6 (epoch 1).
    ends = every3.ends()
    second = next(i for i in range(1, len(ends)) if ends[i] <= ends[i - 1])
    assert {2, 5} <= set(ends[:second]) and {0, 3, 6} <= set(ends[second:])
