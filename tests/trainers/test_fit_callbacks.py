"""Callbacks that change or read the model during a fused fit."""

import numpy as np
import pytest
from trainer_testlib import CountRuns, Snapshot, counted_mlp, regression_data

import loopax as keras


@pytest.fixture(scope="module")
def setup():
    keras.utils.set_random_seed(0)
    x, y = regression_data()
    model, _ = counted_mlp()
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, validation_data=(x, y))
    return model, Snapshot(model), x, y


def test_learning_rate_scheduler_changes_the_rate_without_recompiling(setup):
    model, snapshot, x, y = setup
    counter = next(layer for layer in model.layers if isinstance(layer, CountRuns))
    runs = counter.runs
    snapshot.restore()
    before = model.get_weights()
    # Epoch 0 at rate 0 (nothing moves), epoch 1 at 0.05 (weights move).
    rates = []
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[
        keras.callbacks.LearningRateScheduler(lambda epoch: 0.0 if epoch == 0 else 0.05),
        keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs: rates.append(model.get_weights()[0].copy()))])
    np.testing.assert_array_equal(rates[0], before[0])
    assert not np.allclose(rates[1], before[0])
    assert history.history["learning_rate"] == pytest.approx([0.0, 0.05])
    assert counter.runs == runs    # the new rates ran in the same compiled step


def test_early_stopping_restores_the_best_weights(setup):
    model, snapshot, x, y = setup
    snapshot.restore()
    seen = []

    class Spoil(keras.callbacks.Callback):
        """Makes epochs after the first worse by corrupting the weights."""

        def on_epoch_end(self, epoch, logs=None):
            seen.append((logs["val_loss"], [w.copy() for w in self.model.get_weights()]))
            if epoch == 0:
                self.model.set_weights([w + 5.0 for w in self.model.get_weights()])

    stopper = keras.callbacks.EarlyStopping(monitor="val_loss", patience=1,
                                            restore_best_weights=True)
    history = model.fit(x, y, batch_size=16, epochs=6, verbose=0, validation_data=(x, y),
                        callbacks=[stopper, Spoil()])
    assert len(history.history["loss"]) < 6
    best = min(range(len(seen)), key=lambda i: seen[i][0])
    for a, b in zip(model.get_weights(), seen[best][1]):
        np.testing.assert_allclose(a, b)


def test_initial_epoch_and_validation_freq(setup):
    model, snapshot, x, y = setup
    snapshot.restore()
    epochs = []
    history = model.fit(x, y, batch_size=16, epochs=5, initial_epoch=2, verbose=0,
                        validation_data=(x, y), validation_freq=2, callbacks=[
                            keras.callbacks.LambdaCallback(
                                on_epoch_begin=lambda epoch, logs: epochs.append(epoch))])
    assert epochs == [2, 3, 4]
    assert len(history.history["loss"]) == 3
    assert len(history.history["val_loss"]) == 1     # after epoch 4 (the 4th, 1-based)


def test_progress_bar_shows_the_epochs_and_metrics(setup, capsys):
    model, snapshot, x, y = setup
    snapshot.restore()
    model.fit(x, y, batch_size=16, epochs=2, verbose=2)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out
    assert "loss:" in out
