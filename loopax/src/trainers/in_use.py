"""One fit/evaluate/predict/save/load at a time per model: a call from another thread
while the model is in use waits its turn (up to `loopax.config.model_wait_timeout()`
seconds) instead of racing on the weights and optimizer state."""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from typing import Any, Callable, Iterator

from loopax.src import config

_TURNS = threading.Condition()


@contextlib.contextmanager
def exclusive_use(model: Any, what: str) -> Iterator[None]:
    """Marks `model` in use by this thread for the duration of `what`.

    A call from another thread while it is in use waits for that call to end, up to
    `loopax.config.model_wait_timeout()` seconds, then raises naming both calls; nested
    calls on the same thread (a callback calling `model.predict` inside `fit`) run at
    once. The mark is cleared on exit, errors included, and waiting calls are woken.
    """
    me = threading.get_ident()
    timeout = config.model_wait_timeout()
    deadline = time.monotonic() + timeout
    with _TURNS:
        while True:
            owner = model.__dict__.get("_loopax_in_use")
            if owner is None or owner[0] == me:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(
                    f"{what}() was called on {model._model_label()} while another thread is "
                    f"running its {owner[2]}(), and it did not finish within "
                    f"{timeout:g} s. A model trains, evaluates, predicts or is saved or "
                    "loaded one call at a time (a running fit() holds its weights in compiled "
                    "state, not in the Variables): wait longer "
                    "(loopax.config.set_model_wait_timeout), save from a callback inside fit() "
                    "(ModelCheckpoint, or on_epoch_end), or use a separate model "
                    "(loopax.models.clone_model) per thread.")
            _TURNS.wait(left)
        depth = owner[1] + 1 if owner is not None else 1
        model.__dict__["_loopax_in_use"] = (me, depth, owner[2] if owner else what)
    try:
        yield
    finally:
        with _TURNS:
            owner = model.__dict__["_loopax_in_use"]
            if owner[1] == 1:
                model.__dict__["_loopax_in_use"] = None
                _TURNS.notify_all()
            else:
                model.__dict__["_loopax_in_use"] = (owner[0], owner[1] - 1, owner[2])


def exclusive(what: str) -> Callable[[Callable], Callable]:
    """Decorator: the method runs under `exclusive_use(self, what)`."""
    def decorate(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            with exclusive_use(self, what):
                return method(self, *args, **kwargs)
        return run
    return decorate
