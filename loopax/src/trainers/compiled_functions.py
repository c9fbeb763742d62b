"""What a compiled model keeps between `fit`/`evaluate`/`predict` calls.

`compile()` starts a fresh `CompiledFunctions`; the trainer fills it lazily.
It lives outside the attributes the ownership walk visits: the functions
reference optimizer and metric Variables, which are not the model's weights.
"""

from __future__ import annotations

from typing import Any, Callable


class CompiledFunctions:
    """The trainer's compiled steps, planners and first-batch facts.

    Attributes:
        value_steps: kind ("train"/"test"/"predict") -> `(step, state groups,
            style)`, the step as a pure function of state values.
        functions: `(kind, mode, run_eagerly)` -> the compiled (or eager)
            function running a number of steps (`mode`: "device", "stacked",
            "single", ...).
        planners: `(kind, source)` -> the `ExecutionPlanner` deciding how
            many steps each call runs.
        example_batch: `jax.ShapeDtypeStruct`s of the latest first batch.
        output_spec: the model's output spec for a batch checked against the
            compiled loss.
        checked_batches: shape signatures of batches already checked.
    """

    def __init__(self):
        self.value_steps: dict[str, tuple] = {}
        self.functions: dict[tuple[str, str, bool], Callable] = {}
        self.planners: dict[tuple[str, str], Any] = {}
        self.example_batch: Any = None
        self.output_spec: Any = None
        self.checked_batches: set = set()
