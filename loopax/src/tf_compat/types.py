"""`tf.types`: the base classes TensorFlow code subclasses or checks against."""

from __future__ import annotations

import types as _types

from loopax.src.tensor import Tensor
from loopax.src.tf_compat.function import ConcreteFunction, TFFunction


class TraceType:
    """The base class of a custom `__tf_tracing_type__` (TensorFlow's tracing protocol).

    loopax accepts such classes so that TensorFlow code defining them runs, but its
    `tf.function` does not consult them: a Python object argument is part of the
    trace key by identity (plain values by value), so a new object traces again,
    and the values it carries are baked into that trace, as TensorFlow's do.
    """

    def is_subtype_of(self, other):
        raise NotImplementedError

    def most_specific_common_supertype(self, others):
        raise NotImplementedError

    def placeholder_value(self, placeholder_context=None):
        raise NotImplementedError


experimental = _types.SimpleNamespace(
    TraceType=TraceType, GenericFunction=TFFunction, ConcreteFunction=ConcreteFunction,
    TensorLike=Tensor, PolymorphicFunction=TFFunction)
