import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopax.callbacks import ProgbarLogger
from loopax.src.callbacks import progbar
from loopax.src.callbacks.progbar import Progbar, format_eta, format_time_per_unit, format_value

ANSI = re.compile(r"\x1b\[[0-9;]*m")
BAR = "━" * 20


def run_epoch(logger, clock, batches, step_seconds, first_seconds, logs, epoch=0):
    """Drives one epoch.

    The first execution takes `first_seconds` (compiling), each later step `step_seconds`.
    """
    logger.on_epoch_begin(epoch)
    previous = -1
    for batch in batches:
        steps = batch - previous
        clock.now += (
            first_seconds + (steps - 1) * step_seconds if previous < 0 else steps * step_seconds
        )
        logger.on_train_batch_end(batch, {"loss": 9.0})
        previous = batch
    logger.on_epoch_end(epoch, logs)


def make_logger(**params):
    logger = ProgbarLogger()
    logger.set_params({"epochs": 1, "steps": 32, "verbose": 1, **params})
    logger.on_train_begin()
    return logger


def test_final_line_when_not_a_terminal(clock, capsys):
    logger = make_logger()
    run_epoch(logger, clock, range(32), 0.017, 0.5, {"loss": 0.2870, "mae": 0.4484})
    assert capsys.readouterr().out == f"32/32 {BAR} 1s 17ms/step - loss: 0.2870 - mae: 0.4484\n"


def test_epoch_headers_and_verbose_2(clock, capsys):
    logger = make_logger(epochs=2, verbose=2)
    for epoch in range(2):
        run_epoch(logger, clock, range(32), 0.017, 0.5, {"loss": 0.2870, "val_loss": 1.5e-4},
                  epoch=epoch)
    line = "32/32 - 1s - 17ms/step - loss: 0.2870 - val_loss: 1.5000e-04\n"
    assert capsys.readouterr().out == "Epoch 1/2\n" + line + "Epoch 2/2\n" + line


def test_verbose_0_prints_nothing(clock, capsys):
    logger = make_logger(epochs=3, verbose=0)
    run_epoch(logger, clock, range(32), 0.017, 0.5, {"loss": 0.2870})
    assert capsys.readouterr().out == ""


def test_fused_steps_jump_and_first_call_is_not_counted(clock, capsys):
    logger = make_logger(verbose="auto")
    run_epoch(logger, clock, [7, 15, 23, 31], 0.010, 2.0, {"loss": 0.125})
    assert capsys.readouterr().out == f"32/32 {BAR} 2s 10ms/step - loss: 0.1250\n"


def test_slow_last_call_after_a_long_first_call_does_not_set_the_rate(clock, capsys):
    logger = make_logger()  # steps 1..31 fused in one call, then a recompiled partial batch
    logger.on_epoch_begin(0)
    clock.now += 31 * 0.010
    logger.on_train_batch_end(30, {"loss": 1.0})
    clock.now += 0.330
    logger.on_train_batch_end(31, {"loss": 1.0})
    logger.on_epoch_end(0, {"loss": 1.0})
    # (0.31 s + 0.33 s) / 32 steps = 20 ms/step, not the last call's 330 ms
    assert capsys.readouterr().out == f"32/32 {BAR} 1s 20ms/step - loss: 1.0000\n"


def test_unknown_number_of_steps_is_learned(clock, capsys):
    logger = make_logger(steps=None)
    run_epoch(logger, clock, range(5), 0.2, 0.2, {"loss": 0.5})
    assert capsys.readouterr().out == f"5/5 {BAR} 1s 200ms/step - loss: 0.5000\n"


def test_through_callback_list_with_device_logs(clock, capsys, fake_model):
    import jax.numpy as jnp

    from loopax.callbacks import CallbackList
    callbacks = CallbackList(add_history=True, add_progbar=True, model=fake_model,
                             epochs=2, steps=4, verbose=1)
    callbacks.on_train_begin()
    for epoch in range(2):
        callbacks.on_epoch_begin(epoch)
        for last in (1, 3):  # two fused executions of 2 steps
            clock.now += 0.25
            callbacks.on_train_batch_end(last, {"loss": jnp.float32(0.5)})
        callbacks.on_test_begin()  # validation inside fit is silent
        callbacks.on_test_batch_end(0, {"loss": jnp.float32(9.0)})
        callbacks.on_test_end({"loss": jnp.float32(0.75)})
        callbacks.on_epoch_end(epoch, {"loss": jnp.float32(0.5), "val_loss": jnp.float32(0.75)})
    callbacks.on_train_end()
    # The bar updates on a background thread, so the fake clock's timings race: match them loosely.
    line = f"4/4 {BAR} \\d+s \\d+m?s/step - loss: 0.5000 - val_loss: 0.7500\n"
    assert re.fullmatch("Epoch 1/2\n" + line + "Epoch 2/2\n" + line, capsys.readouterr().out)
    assert fake_model.history.history == {"loss": [0.5, 0.5], "val_loss": [0.75, 0.75]}


def frames(screen):
    return [ANSI.sub("", frame).rstrip(" ") for frame in screen.getvalue().split("\r")][1:]


def test_live_terminal_redraws_with_eta(clock, terminal, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    bar = Progbar(target=10, stateless_metrics=())  # shown as given, like ProgbarLogger
    for step in range(1, 11):
        clock.now = 1.0 + 3.0 * (step - 1)
        bar.update(step, {"loss": 0.5 - 0.01 * step, "lr": 1.2345e-4}, finalize=False)
        if step == 5:
            clock.now += 0.01  # within the redraw interval: no frame
            bar.update(step, {"loss": 0.45, "lr": 1.2345e-4}, finalize=False)
    bar.update(10, {"loss": 0.4, "lr": 1.2345e-4}, finalize=True)
    shown = frames(terminal)
    assert len(shown) == 11
    assert shown[0] == f" 1/10 {BAR} 9s 1s/step - loss: 0.4900 - lr: 1.2345e-04"
    assert shown[4] == f" 5/10 {BAR} 15s 3s/step - loss: 0.4500 - lr: 1.2345e-04"
    assert shown[-1] == f"10/10 {BAR} 28s 3s/step - loss: 0.4000 - lr: 1.2345e-04\n"
    assert terminal.getvalue().count("\n") == 1
    fifth = terminal.getvalue().split("\r")[5]
    assert "\x1b[32m" + "━" * 10 + "\x1b[0m" + "\x1b[37m" + "━" * 10 in fifth  # half done


def test_live_line_is_cut_to_the_terminal_width(clock, terminal, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    bar = Progbar(target=4)
    clock.now = 1.0
    bar.update(1, {"a_long_metric_name": 0.5})
    assert frames(terminal) == ["1/4 " + BAR + " 3s 1s/step - a"]  # 39 columns


def test_live_redraw_clears_a_longer_previous_line(clock, terminal, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    bar = Progbar(target=100)
    clock.now = 100.0
    bar.update(1)  # ETA 99 * 100s
    clock.now = 101.0
    bar.update(2)  # ETA 98 * 1s
    first, second = [ANSI.sub("", f) for f in terminal.getvalue().split("\r")[1:]]
    assert first == f"  1/100 {BAR} 2:45:00 100s/step"
    assert second == f"  2/100 {BAR} 1:38 1s/step" + " " * 5


def test_standalone_progbar_averages_unless_stateful(clock, capsys):
    bar = Progbar(target=10, verbose=2, stateful_metrics=["acc"])
    bar.add(1, [("loss", 1.0), ("acc", 0.1)])
    bar.add(1, [("loss", 3.0), ("acc", 0.2)])
    bar.add(2, [("loss", 5.0), ("acc", 0.3)])
    bar.update(4, finalize=True)
    assert capsys.readouterr().out.endswith(" - loss: 3.5000 - acc: 0.3000\n")


def test_unknown_target_in_a_terminal(clock, terminal):
    bar = Progbar(target=None)
    clock.now = 2.0
    bar.update(5, {"loss": 0.25})
    assert frames(terminal) == ["      5/Unknown 2s 400ms/step - loss: 0.2500"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="target"):
        Progbar(target=-1)
    with pytest.raises(ValueError, match="verbose"):
        Progbar(target=3, verbose=3)


def test_formats():
    assert format_value(0.28704) == "0.2870"
    assert format_value(-0.25) == "-0.2500"
    assert format_value(1e-4) == "1.0000e-04"
    assert format_value(0.0) == "0.0000e+00"
    assert format_value("text") == "text"
    assert format_eta(42.9) == "42s"
    assert format_eta(125) == "2:05"
    assert format_eta(3725) == "1:02:05"
    assert format_time_per_unit(0.017, "step") == "17ms/step"
    assert format_time_per_unit(2.4, "step") == "2s/step"
    assert format_time_per_unit(350e-6, "sample") == "350us/sample"
    assert format_time_per_unit(0, "step") == "0s/step"


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_formatted_value_reads_back(value):
    shown = float(format_value(value))
    if abs(value) > 1e-3:
        assert abs(shown - value) <= 5.0001e-5
    else:
        assert abs(shown - value) <= 5.0001e-5 * abs(value)


@given(st.integers(1, 5000), st.data())
def test_bar_shows_progress_proportionally(target, data):
    current = data.draw(st.integers(0, target))
    screen = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(progbar, "_output", lambda: screen)
        bar = Progbar(target=target)
        bar._color = bar._live = True
        bar.update(current, finalize=False)
    count, rest = ANSI.sub("", screen.getvalue()).lstrip("\r ").split(" ", 1)
    assert count == f"{current}/{target}"
    assert rest.startswith(BAR + " ")
    green = re.search(r"\x1b\[32m(━*)\x1b\[0m", screen.getvalue())
    assert (len(green.group(1)) if green else 0) == 20 * current // target
