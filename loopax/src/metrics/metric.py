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

import jax.numpy as jnp

from loopax.src import dtypes
from loopax.src.distribution import placement
from loopax.src.module import _snake_case, owned
from loopax.src.state import Variable, check_values_match, name_scope, pure, unique_name
from loopax.src.tensor import unwrap


class Metric:
    """Base class for metrics: implement `update_state` and `result`, create
    state with `add_variable` in `__init__`.

    Args:
        name: the metric's name (defaults to the class name in snake case,
            numbered when taken: "precision", "precision_1", ...).
        dtype: the dtype of its state and result (default: `floatx()`).
    """

    def __init__(self, dtype=None, name=None):
        self.name = name or unique_name(_snake_case(type(self).__name__))
        self._dtype = dtypes.standardize(dtype) if dtype is not None else dtypes.floatx()
        self._variables = []
        self._initial_values = []

    def _owned(self):
        """(own Variables, Metrics held as attributes), by the ownership walk."""
        return owned(self, wanted=lambda value: isinstance(value, Metric))

    @property
    def dtype(self):
        return self._dtype

    # ---- state -----------------------------------------------------------
    def add_variable(self, shape, initializer="zeros", dtype=None, aggregation="sum", name=None):
        """A non-trainable Variable named `<metric name>/<name>`, in `.variables`."""
        if "_variables" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call `super().__init__(...)` "
                               "before `add_variable`.")
        dtype = dtypes.standardize(dtype) if dtype is not None else self.dtype
        if isinstance(initializer, str) and initializer in _CONSTANT_INITIALIZERS:
            initializer = _CONSTANT_INITIALIZERS[initializer](tuple(shape), dtype)
        with name_scope(self.name.replace("/", ">")), placement.replicated():
            variable = Variable(initializer, shape=tuple(shape), dtype=dtype, trainable=False,
                                name=name, aggregation=aggregation)
        self._variables.append(variable)
        self._initial_values.append(variable.value)
        return variable

    def add_weight(self, shape=(), initializer="zeros", dtype=None, name=None):
        """Alias of `add_variable` (older Keras code uses this name)."""
        return self.add_variable(shape, initializer, dtype=dtype, name=name)

    @property
    def variables(self) -> list[Variable]:
        """Own variables in creation order, then those of held metrics."""
        out, metrics = self._owned()
        for metric in metrics:
            out.extend(metric.variables)
        return out

    def reset_state(self):
        """Puts every variable back to its initial value."""
        for variable, value in zip(self._variables, self._initial_values):
            variable.assign(value)
        for metric in self._owned()[1]:
            metric.reset_state()

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement `update_state`.")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must implement `result`.")

    def __call__(self, *args, **kwargs):
        """Updates the state with one batch and returns the new result."""
        self.update_state(*args, **kwargs)
        return self.result()

    # ---- stateless -------------------------------------------------------
    def _stateless(self, method, metric_variables, *args, **kwargs):
        """(output, new values) of `method` run on the state `metric_variables`."""
        variables = self.variables
        values = check_values_match(variables, metric_variables, "metric_variables",
                                    f"{type(self).__name__}.stateless_{method.__name__}")
        return pure(method, variables)(values, *args, **kwargs)

    def stateless_update_state(self, metric_variables, *args, **kwargs):
        """`update_state` on the state `metric_variables` (values or Variables,
        in the order of `.variables`); returns the new values as a list."""
        return self._stateless(self.update_state, metric_variables, *args, **kwargs)[1]

    def stateless_result(self, metric_variables):
        """`result()` computed from the state `metric_variables`."""
        return self._stateless(self.result, metric_variables)[0]

    def stateless_reset_state(self):
        """The initial values of `.variables`, as a list."""
        variables = self.variables
        return pure(self.reset_state, variables)([v.value for v in variables])[1]

    # ---- config ----------------------------------------------------------
    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"


_CONSTANT_INITIALIZERS = {"zeros": jnp.zeros, "ones": jnp.ones}


def as_array(x, dtype=None):
    """`x` (array, Variable, Tensor, list, number) as a JAX array, cast to `dtype`."""
    x = jnp.asarray(unwrap(x))
    return x if dtype is None else x.astype(dtype)
