"""`LambdaCallback`: a callback made of plain functions."""

from loopax.src.api_export import export
from loopax.src.callbacks.callback import HOOKS, Callback


@export("loopax.callbacks.LambdaCallback")
class LambdaCallback(Callback):
    """Builds a callback from functions.

    E.g. `LambdaCallback(on_epoch_end=lambda epoch, logs: ...)`.

    Epoch and batch functions take `(index, logs)`; begin/end functions take `(logs)`.
    Any hook name (`on_test_batch_end`, `on_predict_begin`, ...) may be given.

    Args:
        on_epoch_begin: `f(epoch, logs)`, or None.
        on_epoch_end: `f(epoch, logs)`, or None.
        on_train_begin: `f(logs)`, or None.
        on_train_end: `f(logs)`, or None.
        on_train_batch_begin: `f(batch, logs)`, or None.
        on_train_batch_end: `f(batch, logs)`, or None.
        **kwargs: Functions for the other hooks, by hook name.

    Raises:
        TypeError: an unknown hook name, or a hook that is not callable.
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        functions = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                         on_train_begin=on_train_begin, on_train_end=on_train_end,
                         on_train_batch_begin=on_train_batch_begin,
                         on_train_batch_end=on_train_batch_end, **kwargs)
        unknown = sorted(set(functions) - set(HOOKS))
        if unknown:
            raise TypeError(f"LambdaCallback: unknown hooks {unknown}; known hooks: {list(HOOKS)}.")
        for hook, function in functions.items():
            if function is None:
                continue
            if not callable(function):
                raise TypeError(f"LambdaCallback: {hook} must be callable, got {function!r}.")
            setattr(self, hook, function)
