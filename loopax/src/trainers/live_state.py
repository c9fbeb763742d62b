"""`LiveState`: the training state while `fit`, `evaluate` or `predict` runs.

During a pass the state's values live in device arrays the compiled calls take
(donated) and return; `write_back()` assigns them to the Variables (epoch ends,
callbacks that may look at the model, the end, an interruption) and `refresh()`
re-reads the Variables while they hold the current values, so a callback's
assignment (a learning rate, restored weights) reaches the next step.

Ctrl-C: a compiled call deletes the arrays it was given, so `call` and
`write_back` run with SIGINT held (`INTERRUPTS_HELD`): a KeyboardInterrupt comes
before or after them, and the interrupted `fit` writes back a consistent state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import jax
import jax.numpy as jnp

from loopax.src.distribution import placement
from loopax.src.utils.interrupts import INTERRUPTS_HELD

if TYPE_CHECKING:
    from loopax.src.state import Variable


class LiveState:
    def __init__(self, groups):
        self.groups = [list(g) for g in groups]
        self.values = None
        self.in_variables = True
        self._owned = set()
        self.refresh(at_start=True)

    @staticmethod
    def current_values(groups: Sequence[Sequence[Variable]]) -> tuple:
        """The Variables' values, placed as a compiled call takes them (not copied:
        for lowering a program, not for donating)."""
        return tuple([placement.state_value(v, v.value) for v in group] for group in groups)

    def refresh(self, at_start: bool = False) -> None:
        """Reads the values from the Variables if they hold the current ones (`at_start`:
        values an earlier failed call consumed are read later, once `on_train_begin` may
        have restored them)."""
        if not self.in_variables and self.values is not None:
            return
        values = [[variable.value for variable in group] for group in self.groups]
        lost = [variable.path for group, group_values in zip(self.groups, values)
                for variable, value in zip(group, group_values) if _deleted(value)]
        if lost and at_start:
            return
        if lost:
            raise ValueError(f"Variables {lost[:3]}{' ...' if len(lost) > 3 else ''} have no "
                             f"value: {LOST_STATE}")
        # An array someone else may hold too (an initial value, a callback's assignment):
        # donate a copy, never the original. One device_put copies them all.
        shared = [(g, i) for g, group in enumerate(values) for i, value in enumerate(group)
                  if id(value) not in self._owned]
        for (g, i), copy in zip(shared, _copies([values[g][i] for g, i in shared])):
            values[g][i] = copy
        values = [[placement.state_value(variable, value)
                   for variable, value in zip(group, group_values)]
                  for group, group_values in zip(self.groups, values)]
        self.stored(tuple(values))
        self.in_variables = True

    def call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """Runs the compiled `fn(values, *args, **kwargs) -> (new_values, out)` on
        the state and records `new_values`, as one step that Ctrl-C cannot cut in
        two; returns `out`."""
        with INTERRUPTS_HELD:
            try:
                values, out = fn(self.values, *args, **kwargs)
            except Exception as error:
                if _deleted(self.values):
                    error.add_note(LOST_STATE)
                raise
            self.stored(values)
        return out

    def stored(self, values: tuple) -> None:
        """Records the values a compiled call returned (the Variables are now stale)."""
        self.values = values
        self._owned = {id(v) for group in values for v in group}
        self.in_variables = False

    def write_back(self) -> None:
        """Assigns the current values to the Variables."""
        if self.in_variables or self.values is None:
            return
        with INTERRUPTS_HELD:   # all Variables or none (the others' buffers are donated next)
            for group, values in zip(self.groups, self.values):
                for variable, value in zip(group, values):
                    if isinstance(value, jax.Array) and value.is_deleted():
                        continue   # consumed by a call that failed; nothing better to keep
                    if variable._layout is None:
                        # A compiled call's output has the Variable's shape and dtype:
                        # `assign`'s checks and conversions would cost 2 jnp calls each.
                        variable._write(value)
                    else:   # placed exactly as its layout says
                        variable.assign(value)
            self.in_variables = True


LOST_STATE = (
    "a compiled step raised after its state was donated to it (JAX frees donated "
    "buffers even when the call fails; Keras does the same), so the model's and the "
    "optimizer's Variables lost their values. Rerun fit() with the BackupAndRestore "
    "callback that was saving (it restores the model, the optimizer and the position), "
    "or load a saved model (keras.models.load_model).")


def _deleted(tree):
    return any(isinstance(a, jax.Array) and a.is_deleted() for a in jax.tree.leaves(tree))


def _copies(arrays):
    """Copies of state arrays to donate. `device_put(may_alias=False)` copies without
    compiling a program (jnp.array(copy=True) compiles one per shape), all in one call; an
    array spread over several processes needs the compiled copy."""
    spread = [getattr(a, "is_fully_addressable", True) is False for a in arrays]
    local = iter(jax.device_put([a for a, s in zip(arrays, spread) if not s], may_alias=False))
    return [jnp.array(a, copy=True) if s else next(local) for a, s in zip(arrays, spread)]
