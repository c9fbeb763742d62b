"""`Progbar`: the Keras 3 progress bar, `32/32 ━━━━━━━━━━━━━━━━━━━━ 1s 17ms/step - loss: 0.2870`.

Live in a terminal (redrawn in place with a carriage return, ETA while
running); when stdout is not a terminal only the finished line is printed.
"""

import math
import os
import shutil
import sys
import time

import numpy as np

from loopax.src.api_export import export
from loopax.src.utils import io_utils

_clock = time.monotonic  # tests substitute a fake clock here


def _output():
    """Where the bar is printed (read at each write, so redirections apply)."""
    return sys.stdout

_BAR = "━"
_BOLD, _GREEN, _GREY, _RESET = "\x1b[1m", "\x1b[32m", "\x1b[37m", "\x1b[0m"


def format_value(value):
    """A metric as Keras prints it: `0.2870`, or `1.2346e-04` when |value| <= 1e-3."""
    try:
        number = float(np.mean(value))
    except (TypeError, ValueError):
        return str(value)
    return f"{number:.4f}" if abs(number) > 1e-3 else f"{number:.4e}"


def format_time_per_unit(seconds, unit_name):
    """`17ms/step`, `2s/step`, `350us/step`."""
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/{unit_name}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit_name}"
    return f"{seconds * 1e6:.0f}us/{unit_name}"


def format_eta(seconds):
    """`42s`, `3:07` or `1:02:03`."""
    if seconds > 3600:
        return "%d:%02d:%02d" % (seconds // 3600, (seconds % 3600) // 60, seconds % 60)
    if seconds > 60:
        return "%d:%02d" % (seconds // 60, seconds % 60)
    return "%ds" % seconds


def _is_live_display():
    if not io_utils.is_interactive_logging_enabled():
        return False   # finished lines only, to the logger
    isatty = getattr(_output(), "isatty", None)
    return bool(isatty and isatty()) or "ipykernel" in sys.modules


@export("loopax.utils.Progbar")
class Progbar:
    """Displays a progress bar.

    Args:
        target: total number of steps, or None if unknown.
        width: bar width in characters.
        verbose: 0 silent, 1 bar (live in a terminal), 2 one line when done.
        interval: minimum seconds between two live redraws.
        stateful_metrics: names displayed as given; all others are averaged
            over steps. Give at most one of this and `stateless_metrics`.
        stateless_metrics: names averaged over steps; all others displayed as given.
        unit_name: what a step is called (`"step"`, `"sample"`).
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None,
                 stateless_metrics=None, unit_name="step"):
        if target is not None and (not isinstance(target, (int, np.integer)) or target < 0):
            raise ValueError(f"Progbar: target must be a non-negative int or None, got {target!r}.")
        if not isinstance(width, (int, np.integer)) or width <= 0:
            raise ValueError(f"Progbar: width must be a positive int, got {width!r}.")
        if verbose not in (0, 1, 2):
            raise ValueError(f"Progbar: verbose must be 0, 1 or 2, got {verbose!r}.")
        if stateful_metrics is not None and stateless_metrics is not None:
            raise ValueError("Progbar: give stateful_metrics or stateless_metrics, not both.")
        self.target = target
        self.width = int(width)
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = None if stateful_metrics is None else set(stateful_metrics)
        self.stateless_metrics = None if stateless_metrics is None else set(stateless_metrics)
        self._live = _is_live_display()
        self._color = self._live and "NO_COLOR" not in os.environ
        self._values = {}  # name -> [weighted sum, weight]
        self._seen = 0
        self._start = _clock()
        self._first_update = None  # (step, time): later rates exclude the first (compiling) call
        self._time_per_unit = 0.0
        self._last_draw = -math.inf
        self._drawn_width = 0

    def update(self, current, values=None, finalize=None):
        """Moves the bar to step `current` (steps may jump) with `values` (pairs or dict)."""
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._record(current, values, finalize)
        now = _clock()
        if current > self._seen or self._first_update is None:
            self._time_per_unit = self._estimate_time_per_unit(current, now)
        self._seen = current
        if self.verbose == 1:
            self._draw_bar(current, now, finalize)
        elif self.verbose == 2 and finalize:
            _write(self._summary_line(current, now) + "\n")

    def due(self):
        """Whether the next `update` would redraw a live bar (so its values are worth fetching)."""
        return (self.verbose == 1 and self._live
                and _clock() - self._last_draw >= self.interval)

    def add(self, n, values=None):
        """Advances the bar by `n` steps."""
        self.update(self._seen + n, values)

    def _record(self, current, values, finalize):
        items = values.items() if isinstance(values, dict) else (values or ())
        for name, value in items:
            if self._averaged(name) and not finalize and _is_number(value):
                weight = max(current - self._seen, 1)
                total, count = self._values.get(name, (0.0, 0))
                self._values[name] = (total + value * weight, count + weight)
            else:
                self._values[name] = (value, 1)

    def _averaged(self, name):
        if self.stateful_metrics is not None:
            return name not in self.stateful_metrics
        if self.stateless_metrics is not None:
            return name in self.stateless_metrics
        return True

    def _estimate_time_per_unit(self, current, now):
        if current <= 0:
            return 0.0
        if self._first_update is None:
            self._first_update = (current, now)
        first_step, first_time = self._first_update
        # Leave the first (compiling) call out only once later calls ran at least as
        # many steps; else one slow last call (a partial batch) would set the rate.
        if current - first_step >= first_step:
            return (now - first_time) / (current - first_step)
        return (now - self._start) / current

    def _metrics_text(self):
        text = ""
        for name, (total, count) in self._values.items():
            value = total / max(count, 1) if count != 1 else total
            text += f" - {name}: {format_value(value)}"
        return text

    def _count_text(self, current):
        if self.target is None:
            return "%7d/Unknown" % current
        digits = len(str(self.target))
        return f"{current:>{digits}d}/{self.target}"

    def _draw_bar(self, current, now, finalize):
        if not finalize and (not self._live or now - self._last_draw < self.interval):
            return
        self._last_draw = now
        count = self._count_text(current)
        plain, styled = count, self._style(count, _BOLD)
        if self.target:
            done = min(int(self.width * current / self.target), self.width)
            rest = self.width - done
            plain += " " + _BAR * self.width
            styled += " "
            if done:
                styled += self._style(_BAR * done, _GREEN)
            if rest:  # without colour the unfinished part is drawn thin
                styled += self._style((_BAR if self._color else "─") * rest, _GREY)
        if self.target and not finalize:
            clock = format_eta(self._time_per_unit * (self.target - current))
        else:
            clock = f"{now - self._start:.0f}s"
        timing = " " + clock + " " + format_time_per_unit(self._time_per_unit, self.unit_name)
        plain += timing
        styled += " " + self._style(clock, _BOLD) + timing[len(clock) + 1:]
        metrics = self._metrics_text()
        if not self._live:
            _write(plain + metrics + "\n")
            return
        if not finalize:  # a live line must fit the terminal or "\r" cannot redraw it
            room = shutil.get_terminal_size((80, 24)).columns - 1 - len(plain)
            metrics = metrics[:max(room, 0)]
        width = len(plain) + len(metrics)
        padding = " " * max(self._drawn_width - width, 0)
        _write("\r" + styled + metrics + padding + ("\n" if finalize else ""))
        self._drawn_width = 0 if finalize else width

    def _style(self, text, code):
        return f"{code}{text}{_RESET}" if self._color else text

    def _summary_line(self, current, now):
        count = self._count_text(current).strip()
        return (f"{count} - {now - self._start:.0f}s - "
                f"{format_time_per_unit(self._time_per_unit, self.unit_name)}"
                + self._metrics_text())


def _is_number(value):
    return isinstance(value, (int, float, np.number, np.ndarray)) or hasattr(value, "__array__")


def _write(text):
    if not io_utils.is_interactive_logging_enabled():
        io_utils.print_msg(text)   # the `loopax` logger (config.disable_interactive_logging)
        return
    stream = _output()
    stream.write(text)
    stream.flush()
