"""`LearningRateScheduler`: set the learning rate from `schedule(epoch, lr)` each epoch."""

import inspect
import numbers

import numpy as np

from loopax.src.api_export import export
from loopax.src.callbacks import progbar
from loopax.src.callbacks.callback import Callback
from loopax.src.callbacks.learning_rate import get_learning_rate, set_learning_rate


@export("loopax.callbacks.LearningRateScheduler")
class LearningRateScheduler(Callback):
    """At the start of each epoch sets `lr = schedule(epoch, lr)` (0-based epoch).

    A one-argument `schedule(epoch)` is accepted too. The optimizer takes the
    new rate without recompiling; `learning_rate` is added to the epoch's logs.

    Args:
        schedule: `f(epoch, lr) -> float` or `f(epoch) -> float`.
        verbose: 1 prints each new rate; 0 (the default) is quiet.

    Raises:
        TypeError: `schedule` is not callable.
        ValueError: (at an epoch's start) `schedule` returned something that is not a
            float.
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        if not callable(schedule):
            raise TypeError(f"LearningRateScheduler: schedule must be callable, got {schedule!r}.")
        self.schedule = schedule
        self.verbose = verbose
        self._takes_lr = _accepts_two_arguments(schedule)

    def on_epoch_begin(self, epoch, logs=None):
        current = get_learning_rate(self.model, "LearningRateScheduler")
        new = self.schedule(epoch, current) if self._takes_lr else self.schedule(epoch)
        if isinstance(new, np.ndarray) and new.size == 1:
            new = new.reshape(())[()]
        if not isinstance(new, numbers.Real):
            raise ValueError(
                f"LearningRateScheduler: schedule({epoch}, {current}) returned {new!r}; "
                "it must return a float.")
        set_learning_rate(self.model, float(new), "LearningRateScheduler")
        if self.verbose > 0:
            progbar._write(
                f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                f"{float(new)}.\n"
            )

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = get_learning_rate(self.model, "LearningRateScheduler")


def _accepts_two_arguments(fn):
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)
