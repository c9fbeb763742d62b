import numpy as np
import pytest

from loopax.callbacks import CallbackList, LearningRateScheduler


def run(callback, model, drive, epochs):
    seen = []
    callbacks = CallbackList([callback], add_history=True, model=model, epochs=epochs, steps=1,
                             verbose=0)
    callbacks.on_train_begin()
    for epoch in range(epochs):
        callbacks.on_epoch_begin(epoch)
        seen.append(model.optimizer.learning_rate)
        callbacks.on_epoch_end(epoch, {"loss": 1.0})
    callbacks.on_train_end()
    return seen


def test_schedule_of_epoch_and_current_rate(make_model, drive, capsys):
    model = make_model(learning_rate=0.1)
    scheduler = LearningRateScheduler(lambda epoch, lr: lr if epoch < 2 else lr * 0.5, verbose=1)
    rates = run(scheduler, model, drive, 4)
    assert rates == [0.1, 0.1, 0.05, 0.025]
    assert model.history.history["learning_rate"] == [0.1, 0.1, 0.05, 0.025]
    assert (
        "Epoch 3: LearningRateScheduler setting learning rate to 0.05." in capsys.readouterr().out
    )


def test_one_argument_schedule_and_numpy_results(make_model, drive):
    model = make_model(learning_rate=np.float32(1.0))
    assert run(LearningRateScheduler(lambda epoch: np.float32(10.0 ** -epoch)), model, drive,
               3) == pytest.approx([1.0, 0.1, 0.01])


def test_bad_schedule(make_model, drive):
    with pytest.raises(ValueError, match="must return a float"):
        run(LearningRateScheduler(lambda epoch, lr: "fast"), make_model(), drive, 1)
    with pytest.raises(TypeError, match="callable"):
        LearningRateScheduler(0.1)
