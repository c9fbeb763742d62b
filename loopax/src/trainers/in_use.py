"""One fit/evaluate/predict at a time per model: a call from another thread while the model
is in use raises a clear error instead of racing on the weights and optimizer state."""

from __future__ import annotations

import contextlib
import functools
import threading

_OWNERS_LOCK = threading.Lock()


@contextlib.contextmanager
def exclusive_use(model, what):
    """Marks `model` in use by this thread for the duration of `what`.

    A call from another thread while it is in use raises a clear error
    instead of racing on the weights and optimizer state; nested calls on
    the same thread (a callback calling `model.predict` inside `fit`) are
    fine. The mark is cleared on exit, errors included.
    """
    me = threading.get_ident()
    with _OWNERS_LOCK:
        owner = model.__dict__.get("_loopax_in_use")
        if owner is not None and owner[0] != me:
            raise RuntimeError(
                f"{what}() was called on {model._model_label()} while another thread is "
                f"running its {owner[2]}(). A model trains, evaluates, predicts or is "
                "saved or loaded one call at a time (a running fit() holds its weights in "
                "compiled state, not in the Variables): wait for the other call to finish "
                "(e.g. join its thread), save from a callback inside fit() (ModelCheckpoint, "
                "or on_epoch_end), or use a separate model (loopax.models.clone_model) per "
                "thread.")
        depth = owner[1] + 1 if owner is not None else 1
        model.__dict__["_loopax_in_use"] = (me, depth, owner[2] if owner else what)
    try:
        yield
    finally:
        with _OWNERS_LOCK:
            owner = model.__dict__["_loopax_in_use"]
            model.__dict__["_loopax_in_use"] = None if owner[1] == 1 else \
                (owner[0], owner[1] - 1, owner[2])


def exclusive(what):
    """Decorator: the method runs under `exclusive_use(self, what)`."""
    def decorate(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            with exclusive_use(self, what):
                return method(self, *args, **kwargs)
        return run
    return decorate
