"""`python -m loopax.demo`: trains, evaluates, saves/reloads, plots, points onwards."""

import sys

import numpy as np

import loopax
from loopax.src import demo


def test_python_m_loopax_demo_runs_main():
    import loopax.demo
    assert loopax.demo.main is demo.main


def test_demo_trains_saves_reloads_and_plots(tmp_path, capsys):
    result = demo.main(["--epochs", "2", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "Epoch 1/2" in printed and "Epoch 2/2" in printed and "━" in printed  # the progress bar
    assert len(result["history"]["loss"]) == 2
    assert result["history"]["loss"][1] < result["history"]["loss"][0]

    # The printed test accuracy is what the reloaded file predicts, counted by hand.
    (_, _), (x_test, y_test) = demo.load_digits()
    reloaded = loopax.saving.load_model(result["model_path"])
    predicted = np.argmax(np.asarray(reloaded.predict(x_test, verbose=0)), axis=-1)
    accuracy = float(np.mean(predicted == y_test))
    np.testing.assert_allclose(accuracy, result["test"]["accuracy"], atol=1e-6)
    assert accuracy > 0.5            # 10 classes: chance is 0.1
    assert f"test accuracy {accuracy:.4f}" in printed

    png = tmp_path / "history.png"
    assert result["plot_path"] == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"Training curves: {png}" in printed
    assert "docs/guides/" in printed


def test_demo_without_matplotlib_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)   # import matplotlib -> ImportError
    history = loopax.callbacks.History()
    assert demo.plot_history(history, str(tmp_path / "h.png")) is False
    assert "pip install 'loopax[plot]'" in capsys.readouterr().out
    assert not (tmp_path / "h.png").exists()
