import pytest

from loopax.callbacks import CallbackList, LambdaCallback


def test_functions_become_hooks(fake_model, drive):
    events = []
    callback = LambdaCallback(
        on_train_begin=lambda logs: events.append("begin"),
        on_epoch_end=lambda epoch, logs: events.append(("epoch", epoch, logs["loss"])),
        on_train_batch_end=lambda batch, logs: events.append(("batch", batch)),
        on_train_end=lambda logs: events.append("end"))
    callbacks = CallbackList([callback], model=fake_model, epochs=1, steps=4, verbose=0)
    drive(callbacks, fake_model, [{"loss": 0.5}], steps=4, per_execution=2)
    assert events == ["begin", ("batch", 1), ("batch", 3), ("epoch", 0, 0.5), "end"]


def test_other_hooks_by_name_and_typos_rejected():
    seen = []
    callback = LambdaCallback(on_test_end=lambda logs: seen.append(logs))
    CallbackList([callback]).on_test_end({"loss": 2})
    assert seen == [{"loss": 2.0}]
    with pytest.raises(TypeError, match="unknown hooks"):
        LambdaCallback(on_epoch_ned=print)
