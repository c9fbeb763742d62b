"""`lax.cond` over stateful code: two branches that assign Variables."""

from __future__ import annotations

from typing import Callable, Sequence

import jax

from loopax.src.array_types import Array
from loopax.src.state import Variable, pure


def assign_cond(predicate: Array, if_true: Callable[[], None], if_false: Callable[[], None],
                variables: Sequence[Variable]) -> None:
    """Runs the branch `predicate` picks (each assigns some of `variables`) as one
    `lax.cond`, then assigns the chosen branch's values: only that branch's
    work runs, even when the predicate is traced."""
    new_values = jax.lax.cond(predicate, _as_pure(if_true, variables),
                              _as_pure(if_false, variables), [v.value for v in variables])
    for v, value in zip(variables, new_values):
        v.assign(value)


def _as_pure(fn, variables):
    """`fn` (which assigns `variables`) as `values -> new values`."""
    run = pure(fn, variables)
    return lambda values: run(values)[1]
