"""`tf.Variable` with TensorFlow's signature, making a `loopax.Variable`."""

from __future__ import annotations

from loopax.src import initializers
from loopax.src.state import Variable as _LoopaxVariable


class _VariableType(type):
    """`isinstance(x, tf.Variable)` holds for every loopax Variable."""

    def __instancecheck__(cls, instance):
        return isinstance(instance, _LoopaxVariable)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, _LoopaxVariable)


class Variable(metaclass=_VariableType):
    """`tf.Variable(initial_value, trainable=True, name=..., dtype=...)`: returns a
    `loopax.Variable` (tracked by Modules, assigned in compiled functions).

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
        variable = _LoopaxVariable(initial_value, shape=shape, dtype=dtype,
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
