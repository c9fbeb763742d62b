import jax.numpy as jnp
import numpy as np
import pytest

from loopax.callbacks import (
    Callback,
    CallbackList,
    History,
    LambdaCallback,
    ProgbarLogger,
    TerminateOnNaN,
)
from loopax.src.callbacks import callback_list
from loopax.src.callbacks.callback import HOOKS
from loopax.src.trainers.pass_kind import PREDICT, TEST, TRAIN

real_logs_to_host = callback_list.logs_to_host


class Recorder(Callback):
    """Records every hook call with its index and logs."""

    def __init__(self):
        super().__init__()
        self.calls = []


def _recording(hook):
    def record(self, *args):
        self.calls.append((hook,) + args)
    return record


for _hook in HOOKS:
    setattr(Recorder, _hook, _recording(_hook))


def test_hook_order_and_counts_with_fused_steps(fake_model, drive):
    recorder = Recorder()
    callbacks = CallbackList([recorder], add_history=True, model=fake_model,
                             epochs=2, steps=5, verbose=0)
    drive(callbacks, fake_model, [{"loss": 0.5}, {"loss": 0.25}], steps=5, per_execution=2)
    names = [call[:2] if call[0].startswith("on_epoch") or "batch" in call[0] else call[:1]
             for call in recorder.calls]
    per_epoch = lambda e: [("on_epoch_begin", e),
                           ("on_train_batch_begin", 0), ("on_train_batch_end", 1),
                           ("on_train_batch_begin", 2), ("on_train_batch_end", 3),
                           ("on_train_batch_begin", 4), ("on_train_batch_end", 4),
                           ("on_epoch_end", e)]
    assert names == [("on_train_begin",)] + per_epoch(0) + per_epoch(1) + [("on_train_end",)]
    assert fake_model.history.history == {"loss": [0.5, 0.25]}
    assert fake_model.history.epoch == [0, 1]


def test_logs_become_python_floats_once_per_hook_call(monkeypatch, fake_model):
    transfers = []
    monkeypatch.setattr(callback_list, "logs_to_host",
                        lambda logs: transfers.append(logs) or real_logs_to_host(logs))
    seen = []
    callbacks = CallbackList([LambdaCallback(on_epoch_end=lambda e, logs: seen.append(logs))] * 2,
                             model=fake_model)
    callbacks.on_epoch_end(0, {"loss": jnp.float32(0.5), "mae": jnp.array([0.25]),
                               "extra": {"acc": np.float64(0.75)}, "n": 3,
                               "vector": jnp.arange(3.0), "tag": "x"})
    assert len(transfers) == 1
    logs = seen[0]
    assert seen[1] is logs  # every callback sees the same converted dict
    assert {k: type(v) for k, v in logs.items() if k not in ("vector", "tag")} == dict.fromkeys(
        ["loss", "mae", "acc", "n"], float)
    assert logs["loss"] == 0.5 and logs["mae"] == 0.25 and logs["acc"] == 0.75 and logs["n"] == 3.0
    np.testing.assert_array_equal(logs["vector"], [0.0, 1.0, 2.0])
    assert logs["tag"] == "x"


def test_batch_hooks_nobody_implements_cost_no_transfer(monkeypatch, fake_model):
    transfers = []
    monkeypatch.setattr(callback_list, "logs_to_host", lambda logs: transfers.append(logs) or logs)
    callbacks = CallbackList([LambdaCallback(on_epoch_end=lambda e, logs: None)],
                             add_history=True, model=fake_model, epochs=1, steps=3, verbose=0)
    for step in range(3):
        callbacks.on_train_batch_begin(step)
        callbacks.on_train_batch_end(step, {"loss": jnp.float32(step)})
    assert transfers == []


def test_pure_loggers_get_device_logs_and_others_get_floats(fake_model):
    received = {}

    class Logger(Callback):
        batch_hooks = "async"

        def on_train_batch_end(self, batch, logs=None):
            received["logger"] = logs

    class Reader(Callback):
        def on_train_batch_end(self, batch, logs=None):
            received["reader"] = logs

    callbacks = CallbackList([Logger(), Reader()], model=fake_model)
    loss = jnp.float32(0.5)
    callbacks.on_train_batch_end(0, {"loss": loss})
    assert received["logger"]["loss"] is loss  # not fetched on its behalf
    assert received["reader"] == {"loss": 0.5} and type(received["reader"]["loss"]) is float


def test_progress_bar_fetches_logs_only_when_it_needs_them(monkeypatch, clock, fake_model):
    from loopax.src.callbacks import progbar_logger
    fetched = []
    monkeypatch.setattr(progbar_logger, "logs_to_host",
                        lambda logs: fetched.append(logs) or real_logs_to_host(logs))
    callbacks = CallbackList(add_progbar=True, model=fake_model, epochs=1, steps=100, verbose=1)
    callbacks.on_train_begin()
    callbacks.on_epoch_begin(0)
    for step in range(100):
        clock.now += 0.001
        callbacks.on_train_batch_end(step, {"loss": jnp.float32(step)})
    # Not a terminal: only the first batch (timing starts there) and the last.
    assert [float(logs["loss"]) for logs in fetched] == [0.0, 99.0]


def test_live_progress_bar_fetches_logs_once_per_redraw(monkeypatch, clock, terminal, fake_model):
    from loopax.src.callbacks import progbar_logger
    fetched = []
    monkeypatch.setattr(progbar_logger, "logs_to_host",
                        lambda logs: fetched.append(logs) or real_logs_to_host(logs))
    callbacks = CallbackList(add_progbar=True, model=fake_model, epochs=1, steps=100, verbose=1)
    callbacks.on_train_begin()
    callbacks.on_epoch_begin(0)
    for step in range(100):
        clock.now += 1 / 64  # a redraw is due every 4 steps (0.05 s apart at least)
        callbacks.on_train_batch_end(step, {"loss": jnp.float32(step)})
    assert [int(logs["loss"]) for logs in fetched] == list(range(0, 100, 4)) + [99]
    assert terminal.getvalue().count("\r") == 25  # the last batch waits for the epoch's end


def test_stop_training_from_a_batch_hook_is_seen_immediately(fake_model, capsys):
    callbacks = CallbackList([TerminateOnNaN()], add_progbar=True, model=fake_model,
                             epochs=1, steps=4, verbose=1)
    callbacks.on_train_batch_end(0, {"loss": jnp.float32(1.0)})
    assert not fake_model.stop_training
    callbacks.on_train_batch_end(1, {"loss": jnp.float32(np.nan)})
    assert fake_model.stop_training
    assert "Batch 1: Invalid loss, terminating training" in capsys.readouterr().out


def test_predict_batch_outputs_are_passed_through(fake_model):
    outputs = []
    callbacks = CallbackList(
        [LambdaCallback(on_predict_batch_end=lambda b, logs: outputs.append(logs["outputs"]))],
        model=fake_model)
    batch = jnp.ones((2, 3))
    callbacks.on_predict_batch_end(0, {"outputs": batch})
    assert outputs[0] is batch


def test_default_callbacks(fake_model):
    history = History()
    callbacks = CallbackList([history], add_history=True, add_progbar=True, model=fake_model,
                             epochs=1, steps=1, verbose=0)
    assert callbacks.callbacks == [history]  # reused, and no bar at verbose=0
    assert fake_model.history is history
    callbacks = CallbackList(None, add_history=True, add_progbar=True, epochs=1, steps=1,
                             verbose=2)
    assert [type(cb) for cb in callbacks.callbacks] == [History, ProgbarLogger]
    assert callbacks.callbacks[1].verbose == 2
    assert callbacks.params == {"epochs": 1, "steps": 1, "verbose": 2}


def test_legacy_on_batch_end_is_called_for_train_batches(fake_model):
    seen = []

    class Legacy(Callback):
        def on_batch_end(self, batch, logs=None):
            seen.append((batch, logs))

    callbacks = CallbackList([[Legacy()]], model=fake_model)  # nested lists are flattened
    callbacks.on_train_batch_end(3, {"loss": jnp.float32(0.5)})
    assert seen == [(3, {"loss": 0.5})]


def test_bad_callbacks_argument_names_the_fix():
    with pytest.raises(TypeError, match="LambdaCallback"):
        CallbackList([lambda epoch, logs: None])
    with pytest.raises(TypeError, match="callbacks"):
        CallbackList("EarlyStopping")


def test_model_property_syncs_fused_state(fake_model):
    syncs = []
    fake_model.jax_state_sync = lambda: syncs.append(1)
    callback = Callback()
    callback.set_model(fake_model)
    assert callback.model is fake_model and syncs == [1]


def test_batch_needs_say_which_callbacks_need_every_batch(fake_model):
    from loopax.callbacks import ModelCheckpoint, ProgbarLogger

    class Reader(Callback):
        def on_batch_end(self, batch, logs=None):   # the legacy alias counts as a train hook
            pass

    class Chunked(Callback):
        batch_hooks = "chunked"
        batch_hooks_freq = 3

        def on_train_batch_end(self, batch, logs=None):
            pass

    reader, lam = Reader(), LambdaCallback(on_test_batch_end=lambda batch, logs: None)
    callbacks = CallbackList([reader, lam, Chunked(), ProgbarLogger(),
                              ModelCheckpoint("x.weights.h5", save_freq=5)], model=fake_model)
    train = callbacks.batch_needs(TRAIN)
    assert train.every_batch == ((reader, "on_train_batch_end"),)
    assert train.step_freqs == (3, 5) and train.sync
    assert "Reader.on_train_batch_end" in train.reason()
    assert callbacks.batch_needs(TEST).every_batch == ((lam, "on_test_batch_end"),)
    predict = callbacks.batch_needs(PREDICT)
    assert predict.every_batch == () and not predict.sync and predict.reason() is None


def test_a_wrong_batch_hooks_declaration_is_named(fake_model):
    class Typo(Callback):
        batch_hooks = "chunk"

        def on_train_batch_end(self, batch, logs=None):
            pass

    with pytest.raises(ValueError, match=r"Typo.batch_hooks must be one of \['every', 'chunked'"):
        CallbackList([Typo()], model=fake_model).batch_needs(TRAIN)
