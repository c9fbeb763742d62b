"""`tf.Variable` with TensorFlow's signature, making a `loopax.Variable`."""

from __future__ import annotations

from typing import Any

import jax

from loopax.src import initializers, state
from loopax.src.state import Variable as _LoopaxVariable
from loopax.src.tf_compat.tensors import as_tensor, dtype_name, numpy_text


class _VariableType(type):
    """`isinstance(x, tf.Variable)` holds for every loopax Variable."""

    def __instancecheck__(cls, instance):
        return isinstance(instance, _LoopaxVariable)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, _LoopaxVariable)


class TensorFlowVariable(_LoopaxVariable):
    """The `loopax.Variable` that `tf.Variable` makes: the same in every way but its
    text, which is TensorFlow's (`<tf.Variable 'v:0' shape=(2,) dtype=float32,
    numpy=array([1., 2.], dtype=float32)>`), and ops on it give EagerTensors, which
    print as TensorFlow's too. Layers' weights keep Keras's."""

    _tensorflow_text = True

    def __repr__(self) -> str:
        if state.is_tracer(self.value):
            return super().__repr__()
        return (f"<tf.Variable '{self.path}:0' shape={tuple(self.shape)} "
                f"dtype={dtype_name(self)}, numpy={numpy_text(self, is_repr=True)}>")

    __str__ = __repr__

    def assign(self, value: Any, use_locking: Any = None, name: str | None = None,
               read_value: bool = True) -> Any:
        """As `loopax.Variable.assign`; the eager result is an EagerTensor."""
        return as_tensor(super().assign(value, use_locking, name, read_value))

    def assign_add(self, delta: Any, use_locking: Any = None, name: str | None = None,
                   read_value: bool = True) -> Any:
        """As `loopax.Variable.assign_add`; the eager result is an EagerTensor."""
        return as_tensor(super().assign_add(delta, use_locking, name, read_value))

    def assign_sub(self, delta: Any, use_locking: Any = None, name: str | None = None,
                   read_value: bool = True) -> Any:
        """As `loopax.Variable.assign_sub`; the eager result is an EagerTensor."""
        return as_tensor(super().assign_sub(delta, use_locking, name, read_value))


jax.tree_util.register_pytree_with_keys(
    TensorFlowVariable, state._flatten_variable_with_keys, state._unflatten_variable,
    state._flatten_variable)


class Variable(metaclass=_VariableType):
    """`tf.Variable(initial_value, trainable=True, name=..., dtype=...)`: returns a
    `loopax.Variable` (a `TensorFlowVariable`, printed as TensorFlow prints; tracked by
    Modules, assigned in compiled functions).

    `initial_value` may be a value or a function of no arguments (TensorFlow's
    deferred initial value); `shape` with None entries (TensorFlow's relaxed
    shape) is accepted and not enforced.
    """

    def __new__(cls, initial_value=None, trainable=None, validate_shape=True,
                caching_device=None, name=None, variable_def=None, dtype=None,
                import_scope=None, constraint=None, synchronization=None,
                aggregation=None, shape=None, experimental_enable_variable_lifting=True):
        if initial_value is None:
            raise ValueError("tf.Variable needs an `initial_value` (a value, or a function "
                             "of no arguments returning one).")
        if callable(initial_value) and not isinstance(initial_value, initializers.Initializer):
            initial_value = initial_value()
        if shape is not None and (None in tuple(shape) or not validate_shape):
            shape = None
        variable = TensorFlowVariable(initial_value, shape=shape, dtype=dtype,
                                   trainable=True if trainable is None else trainable,
                                   name=_without_output_index(name or "Variable"),
                                   aggregation=aggregation)
        if constraint is not None:
            variable.constraint = constraint
        return variable


def _without_output_index(name):
    """TensorFlow's "w:0" names the first output of op "w": the Variable is "w"."""
    base, _, index = name.rpartition(":")
    return base if base and index.isdigit() else name.replace(":", "_")
