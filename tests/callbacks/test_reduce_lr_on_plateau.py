import pytest

from loopax.callbacks import CallbackList, LambdaCallback, ReduceLROnPlateau


def run(callback, model, drive, values):
    rates = []

    def record(epoch, logs):
        rates.append(model.optimizer.learning_rate)

    callbacks = CallbackList([callback, LambdaCallback(on_epoch_end=record)], add_history=True,
                             model=model, epochs=len(values), steps=1, verbose=0)
    drive(callbacks, model, [{"val_loss": v} for v in values], steps=1)
    return rates


def test_reduction_schedule_with_cooldown_and_floor(make_model, drive, capsys):
    model = make_model(learning_rate=1.0)
    callback = ReduceLROnPlateau(factor=0.5, patience=2, cooldown=1, min_lr=0.2, min_delta=0.01,
                                 verbose=1)
    values = [1.0, 0.995, 0.99, 0.98, 0.975, 0.97, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
    rates = run(callback, model, drive, values)
    # By hand (improvement = value < best - 0.01):
    # e0 best 1.0 | e1 0.995 wait 1 | e2 0.99 wait 2 -> 0.5, cooldown 1
    # e3 cooldown ends; 0.98 is best | e4 wait 1 | e5 wait 2 -> 0.25, cooldown 1
    # e6 cooldown ends; 0.9 is best | e7 wait 1 | e8 wait 2 -> max(0.125, 0.2) = 0.2
    # e9.. at min_lr: no further change.
    assert rates == [1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2, 0.2, 0.2, 0.2, 0.2]
    assert model.history.history["learning_rate"][:4] == [1.0, 1.0, 1.0, 0.5]  # before reducing
    out = capsys.readouterr().out
    assert "Epoch 3: ReduceLROnPlateau reducing learning rate to 0.5." in out
    assert out.count("reducing learning rate") == 3


def test_max_mode(make_model, drive):
    model = make_model(learning_rate=0.1)
    rates = run(ReduceLROnPlateau(monitor="val_loss", mode="max", factor=0.1, patience=1,
                                  min_delta=0), model, drive, [1.0, 2.0, 1.0])
    assert rates == pytest.approx([0.1, 0.1, 0.01])


def test_bad_arguments(make_model):
    with pytest.raises(ValueError, match=r"factor must be in \[0, 1\)"):
        ReduceLROnPlateau(factor=1.0)
    with pytest.raises(TypeError, match="unexpected arguments"):
        ReduceLROnPlateau(patiense=3)
    callback = ReduceLROnPlateau()
    model = make_model()
    model.optimizer = None
    callback.set_model(model)
    with pytest.raises(ValueError, match="compile the model with an optimizer"):
        callback.on_epoch_end(0, {"val_loss": 1.0})
