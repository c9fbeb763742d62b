"""`Metric`: a running statistic held in non-trainable Variables.

A metric accumulates over batches with `update_state(...)`, reports with
`result()` and starts over with `reset_state()`. Its state is the list
`metric.variables` (in creation order), so the same metric also runs
statelessly, e.g. inside `jax.jit`:

    values = metric.stateless_reset_state()
    values = metric.stateless_update_state(values, y_true, y_pred)
    result = metric.stateless_result(values)

The stateless methods run the ordinary stateful code inside a `StateScope`
that substitutes `values` for the variables and collects the assignments, so
both ways give the same numbers by construction. A Metric is not a Module:
models do not list its variables among their weights.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import jax.numpy as jnp

from loopax.src import dtypes
from loopax.src.api_export import export
from loopax.src.array_types import Array, ArrayLike, DTypeLike
from loopax.src.distribution import placement
from loopax.src.module import _snake_case, created_variables, owned, track_created
from loopax.src.naming import name_scope, unique_name
from loopax.src.state import Variable, check_values_match, pure
from loopax.src.tensor import eager_tensors, unwrap


def _eager_tensors(result: Callable) -> Callable:
    """`result` giving a loopax `Tensor` for each array it computes eagerly, as a
    layer's eager call does (so `metric.result().numpy()`, Keras-on-TensorFlow code,
    works); traced values (a compiled step's) pass through unchanged."""
    @functools.wraps(result)
    def wrapped(self: Metric) -> Any:
        return eager_tensors(result(self))
    return wrapped


@export("loopax.metrics.Metric")
class Metric:
    """Base class for metrics: implement `update_state` and `result`, create
    state with `add_variable` in `__init__`.

    Args:
        name: the metric's name (defaults to the class name in snake case,
            numbered when taken: "precision", "precision_1", ...).
        dtype: the dtype of its state and result (default: `floatx()`).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "result" in cls.__dict__:
            cls.result = _eager_tensors(cls.__dict__["result"])  # type: ignore[method-assign]

    def __init__(self, dtype: DTypeLike = None, name: str | None = None):
        self.name = name or unique_name(_snake_case(type(self).__name__))
        self._dtype = dtypes.standardize(dtype) if dtype is not None else dtypes.floatx()
        created_variables(self)   # listed first by the ownership walk, in creation order
        self._initial_values = []

    def _owned(self):
        """(own Variables, Metrics held as attributes), by the ownership walk."""
        return owned(self, wanted=lambda value: isinstance(value, Metric))

    @property
    def dtype(self) -> str:
        """The dtype of the metric's state and result."""
        return self._dtype

    # ---- state -----------------------------------------------------------
    def add_variable(self, shape: Sequence[int], initializer: str | Callable | ArrayLike = "zeros",
                     dtype: DTypeLike = None, aggregation: str = "sum",
                     name: str | None = None) -> Variable:
        """A non-trainable Variable named `<metric name>/<name>`, in `.variables`.

        Args:
            shape: The variable's shape.
            initializer: `"zeros"`, `"ones"`, another initializer (or its name), or an array.
            dtype: The dtype (default the metric's).
            aggregation: How distributed replicas would combine it; recorded for Keras
                compatibility.
            name: The variable's name.

        Returns:
            The new `Variable`; `reset_state` puts it back to its initial value.

        Raises:
            RuntimeError: called before `super().__init__()`.
        """
        if "_initial_values" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call `super().__init__(...)` "
                               "before `add_variable`.")
        dtype = dtypes.standardize(dtype) if dtype is not None else self.dtype
        if isinstance(initializer, str) and initializer in _CONSTANT_INITIALIZERS:
            initializer = _CONSTANT_INITIALIZERS[initializer](tuple(shape), dtype)
        with name_scope(self.name.replace("/", ">"), caller=self), placement.replicated():
            variable = Variable(initializer, shape=tuple(shape), dtype=dtype, trainable=False,
                                name=name, aggregation=aggregation)
        track_created(self, variable)
        self._initial_values.append(variable.value)
        return variable

    def add_weight(self, shape: Sequence[int] = (),
                   initializer: str | Callable | ArrayLike = "zeros", dtype: DTypeLike = None,
                   name: str | None = None) -> Variable:
        """Alias of `add_variable` (older Keras code uses this name).

        Args:
            shape: The variable's shape (default a scalar).
            initializer: As in `add_variable`.
            dtype: The dtype (default the metric's).
            name: The variable's name.

        Returns:
            The new `Variable`.
        """
        return self.add_variable(shape, initializer, dtype=dtype, name=name)

    @property
    def variables(self) -> list[Variable]:
        """Own variables in creation order, then those of held metrics."""
        out, metrics = self._owned()
        for metric in metrics:
            out.extend(metric.variables)
        return out

    def reset_state(self) -> None:
        """Puts every variable back to its initial value."""
        for variable, value in zip(created_variables(self), self._initial_values):
            variable.assign(value)
        for metric in self._owned()[1]:
            metric.reset_state()

    def reset_states(self) -> None:
        """`reset_state` by its Keras 2 name (tf.keras code written for TF 2.x
        before Keras 3 calls it)."""
        self.reset_state()

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        """Accumulates the statistic over one batch; subclasses implement it.

        Args:
            *args: Usually `y_true, y_pred`.
            **kwargs: Usually `sample_weight=None`.

        Raises:
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `update_state`.")

    def result(self) -> Any:
        """The current value of the statistic; subclasses implement it.

        Returns:
            An array of `dtype` (a scalar for most metrics).

        Raises:
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `result`.")

    def _log_names(self) -> list[str]:
        """The logs keys `result()` reports: the metric's name, or the keys of
        the dict a container of metrics (the compiled metrics) returns."""
        return [self.name]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Updates the state with one batch and returns the new result.

        Args:
            *args: `update_state`'s arguments.
            **kwargs: `update_state`'s keyword arguments.

        Returns:
            `result()` after the update.
        """
        self.update_state(*args, **kwargs)
        return self.result()

    # ---- stateless -------------------------------------------------------
    def _stateless(self, method, metric_variables, *args, **kwargs):
        """(output, new values) of `method` run on the state `metric_variables`."""
        variables = self.variables
        values = check_values_match(variables, metric_variables, "metric_variables",
                                    f"{type(self).__name__}.stateless_{method.__name__}")
        return pure(method, variables)(values, *args, **kwargs)

    def stateless_update_state(self, metric_variables: Sequence[ArrayLike], *args: Any,
                               **kwargs: Any) -> list[Array]:
        """`update_state` on the given state, without touching the Variables.

        Args:
            metric_variables: One value (or Variable) per entry of `.variables`, in order.
            *args: `update_state`'s arguments.
            **kwargs: `update_state`'s keyword arguments.

        Returns:
            The new values, a list in the order of `.variables`.

        Raises:
            ValueError: `metric_variables` does not match `.variables` in number or shape.
        """
        return self._stateless(self.update_state, metric_variables, *args, **kwargs)[1]

    def stateless_result(self, metric_variables: Sequence[ArrayLike]) -> Any:
        """`result()` computed from the state `metric_variables`.

        Args:
            metric_variables: One value (or Variable) per entry of `.variables`, in order.

        Returns:
            The result, as `result()` returns it.

        Raises:
            ValueError: `metric_variables` does not match `.variables` in number or shape.
        """
        return self._stateless(self.result, metric_variables)[0]

    def stateless_reset_state(self) -> list[Array]:
        """Returns the initial values of `.variables`, as a list."""
        variables = self.variables
        return pure(self.reset_state, variables)([v.value for v in variables])[1]

    # ---- config ----------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor arguments that re-create this metric.

        Returns:
            A JSON-serializable dict (`name`, `dtype`, plus a subclass's own).
        """
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        """Creates a metric from the dict `get_config` returned.

        Args:
            config: The constructor's keyword arguments.

        Returns:
            A new metric of class `cls` (with fresh state).
        """
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"


_CONSTANT_INITIALIZERS = {"zeros": jnp.zeros, "ones": jnp.ones}


def as_array(x, dtype=None):
    """`x` (array, Variable, Tensor, list, number) as a JAX array, cast to `dtype`."""
    x = dtypes.asarray(unwrap(x))
    return x if dtype is None else x.astype(dtype)
