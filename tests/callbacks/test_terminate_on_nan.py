import numpy as np

from loopax.callbacks import CallbackList, TerminateOnNaN


def test_stops_on_the_first_invalid_loss(fake_model, drive, capsys):
    callbacks = CallbackList([TerminateOnNaN()], add_history=True, model=fake_model, epochs=3,
                             steps=6, verbose=0)
    losses = {0: 1.0, 1: 0.5, 2: np.inf, 3: np.nan}
    drive(callbacks, fake_model, [{"loss": 0.1}] * 3, steps=6, per_execution=1,
          train_logs=lambda epoch, step: {"loss": losses.get(step, 0.0)})
    assert fake_model.stop_training
    assert capsys.readouterr().out == "Batch 2: Invalid loss, terminating training\n"
    assert fake_model.history.epoch == [0]
    np.testing.assert_array_equal(fake_model.weights[0], [3.0, 3.0, 3.0])  # steps 0..2 ran
