import sys

import matplotlib
import numpy as np
import pytest

from loopax.callbacks import CallbackList, History

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def trained_history(fake_model, drive):
    """Three epochs; validation every other epoch (validation_freq=2)."""
    callbacks = CallbackList(add_history=True, model=fake_model, epochs=3, steps=2, verbose=0)
    drive(callbacks, fake_model, [
        {"loss": 1.0, "mae": 0.9},
        {"loss": 0.5, "mae": 0.6, "val_loss": 0.7, "val_mae": 0.8},
        {"loss": 0.25, "mae": 0.3},
    ], steps=2)
    return fake_model.history


def test_history_records_each_epoch(fake_model, drive):
    history = trained_history(fake_model, drive)
    assert history.history == {"loss": [1.0, 0.5, 0.25], "mae": [0.9, 0.6, 0.3],
                               "val_loss": [0.7], "val_mae": [0.8]}
    assert history.epoch == [0, 1, 2]
    assert history.params == {"epochs": 3, "steps": 2, "verbose": 0}
    assert history.model is fake_model


def test_plot_draws_train_beside_validation(fake_model, drive, tmp_path):
    history = trained_history(fake_model, drive)
    figure = history.plot()
    figure.savefig(tmp_path / "history.png")
    assert (tmp_path / "history.png").stat().st_size > 0
    loss_axis, mae_axis = figure.axes
    assert loss_axis.get_title() == "loss" and mae_axis.get_title() == "mae"
    train, validation = loss_axis.get_lines()
    assert train.get_label() == "train" and validation.get_label() == "validation"
    np.testing.assert_array_equal(train.get_xdata(), [1, 2, 3])
    np.testing.assert_array_equal(train.get_ydata(), [1.0, 0.5, 0.25])
    np.testing.assert_array_equal(validation.get_xdata(), [2])  # validated at epoch 2 only
    np.testing.assert_array_equal(validation.get_ydata(), [0.7])
    np.testing.assert_array_equal(mae_axis.get_lines()[1].get_ydata(), [0.8])
    plt.close(figure)


def test_plot_selected_keys_on_given_axes(fake_model, drive):
    history = trained_history(fake_model, drive)
    figure, axis = plt.subplots()
    assert history.plot(keys=["val_mae"], ax=axis) is figure
    assert axis.get_title() == "mae" and len(axis.get_lines()) == 2
    with pytest.raises(ValueError, match="1 Axes for 2 panels"):
        history.plot(ax=axis)
    with pytest.raises(ValueError, match=r"\['acc'\] were not recorded"):
        history.plot(keys="acc")
    plt.close(figure)


def test_plot_errors_clearly(monkeypatch):
    with pytest.raises(ValueError, match="nothing recorded"):
        History().plot()
    history = History()
    history.on_epoch_end(0, {"loss": 1.0})
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install loopax\[plot\]"):
        history.plot()
