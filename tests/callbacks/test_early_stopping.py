import numpy as np
import pytest

from loopax.callbacks import CallbackList, EarlyStopping


def fit(callback, model, drive, values, key="val_loss"):
    callbacks = CallbackList([callback], add_history=True, model=model, epochs=len(values),
                             steps=1, verbose=0)
    drive(callbacks, model, [{key: v} for v in values], steps=1)
    return len(model.history.epoch)


def reference_stop_epoch(values, patience, min_delta=0.0):
    """Closed-form rule: stop after `patience` epochs without beating the best by min_delta."""
    best, wait = np.inf, 0
    for epoch, value in enumerate(values):
        wait += 1
        if value < best - min_delta:
            best, wait = value, 0
        elif wait >= patience and epoch > 0:
            return epoch + 1
    return len(values)


@pytest.mark.parametrize("patience", [0, 1, 2, 3])
@pytest.mark.parametrize("min_delta", [0.0, 0.15])
def test_stops_after_patience(make_model, drive, patience, min_delta):
    values = [1.0, 0.8, 0.7, 0.75, 0.72, 0.71, 0.9, 0.5]
    epochs_run = fit(EarlyStopping(patience=patience, min_delta=min_delta), make_model(), drive,
                     values)
    assert epochs_run == reference_stop_epoch(values, patience, min_delta)


def test_restores_the_best_weights(make_model, drive, capsys):
    model = make_model()
    stopper = EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True, verbose=1)
    epochs_run = fit(stopper, model, drive, [1.0, 0.5, 0.6, 0.7, 0.1])
    assert epochs_run == 4 and model.stop_training
    np.testing.assert_array_equal(
        model.weights[0], [2.0, 2.0, 2.0]
    )  # after epoch 2 (one step each)
    assert stopper.best == 0.5 and stopper.best_epoch == 1 and stopper.stopped_epoch == 3
    out = capsys.readouterr().out
    assert "Epoch 4: early stopping" in out
    assert "Restoring model weights from the end of the best epoch: 2." in out


def test_max_mode_and_auto_direction_for_accuracy(make_model, drive):
    assert fit(EarlyStopping(monitor="val_accuracy", patience=2), make_model(), drive,
               [0.5, 0.6, 0.55, 0.58, 0.9], key="val_accuracy") == 4
    assert fit(EarlyStopping(monitor="score", mode="max", patience=0), make_model(), drive,
               [1.0, 2.0, 1.5], key="score") == 3


def test_baseline_must_be_beaten_to_reset_patience(make_model, drive):
    # Keras 3: improving epochs never stop training, but only beating the
    # baseline resets patience, so the first plateau stops at once.
    plateau = [0.9, 0.8, 0.7, 0.7, 0.7, 0.7]
    assert fit(EarlyStopping(patience=2, baseline=0.5), make_model(), drive, plateau) == 4
    assert fit(EarlyStopping(patience=2), make_model(), drive, plateau) == 5
    assert fit(EarlyStopping(patience=2, baseline=0.95), make_model(), drive, plateau) == 5


def test_start_from_epoch_ignores_warm_up(make_model, drive):
    assert fit(EarlyStopping(patience=0, start_from_epoch=3), make_model(), drive,
               [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == 5


def test_unknown_direction_and_missing_monitor(make_model, drive):
    with pytest.raises(ValueError, match="mode='max' or mode='min'"):
        fit(EarlyStopping(monitor="weirdness"), make_model(), drive, [1.0], key="weirdness")
    with pytest.warns(UserWarning, match="`val_loss`, which is not in the logs. Available: loss"):
        fit(EarlyStopping(), make_model(), drive, [1.0, 2.0], key="loss")
    with pytest.raises(ValueError, match="mode must be one of"):
        EarlyStopping(mode="up")
