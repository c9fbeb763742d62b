"""Merging layers: combine a list of inputs into one.

Add, Subtract, Multiply, Average, Maximum, Minimum (elementwise, with
broadcasting) and Concatenate (along `axis`).
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.layers.symbolic import closed_form_output_shape
from loopax.src.tensor import unwrap


@closed_form_output_shape
class _Merge(Layer):
    """Elementwise merge of two or more inputs of broadcastable shapes."""

    _min_inputs, _max_inputs = 2, None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built = True  # no weights; shapes are checked on every call

    def call(self, inputs):
        count = len(inputs) if isinstance(inputs, (list, tuple)) else None
        if count is None or count < self._min_inputs or (
                self._max_inputs and count > self._max_inputs):
            want = (f"exactly {self._min_inputs}" if self._max_inputs == self._min_inputs
                    else f"at least {self._min_inputs}")
            got = f"{count}" if count is not None else f"a single {type(inputs).__name__}"
            raise ValueError(f"{type(self).__name__} {self.name!r} must be called on a list "
                             f"of {want} inputs, got {got}.")
        xs = [unwrap(x) for x in inputs]
        self._check_shapes([tuple(x.shape) for x in xs])
        return self._merge(xs)

    def _check_shapes(self, shapes):
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"{type(self).__name__} {self.name!r}: inputs have incompatible "
                             f"shapes {shapes}; they must be equal or broadcastable.") from None

    def compute_output_shape(self, input_shape):
        """The broadcast of the inputs' shapes (a list of shapes): an unknown size
        against another gives an unknown size, 1 gives way to the other size.
        The batch size is the inputs' one known batch size, else None."""
        shapes = _list_of_shapes(self, input_shape)
        sizes = [tuple(s)[1:] for s in shapes]
        out = sizes[0]
        for other in sizes[1:]:
            out = _broadcast_sizes(self, out, other)
        batch = {s[0] for s in shapes} - {None}
        return (batch.pop() if len(batch) == 1 else None,) + out


@export("loopax.layers.Add")
class Add(_Merge):
    """Sum of the inputs.

    Called on a list of two or more tensors of equal or broadcastable shapes; the
    output has their broadcast shape.

    Args:
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: (when called) fewer than two inputs, or shapes that do not broadcast.
    """

    row_wise = True

    def _merge(self, xs):
        return functools.reduce(jnp.add, xs)


@export("loopax.layers.Subtract")
class Subtract(_Merge):
    """`inputs[0] - inputs[1]` (exactly two inputs).

    The two shapes must be equal or broadcastable; the output has their broadcast shape.

    Args:
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: (when called) not exactly two inputs, or shapes that do not broadcast.
    """

    row_wise = True

    _max_inputs = 2

    def _merge(self, xs):
        return xs[0] - xs[1]


@export("loopax.layers.Multiply")
class Multiply(_Merge):
    """Elementwise product of the inputs.

    Called on a list of two or more tensors of equal or broadcastable shapes; the
    output has their broadcast shape.

    Args:
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: (when called) fewer than two inputs, or shapes that do not broadcast.
    """

    row_wise = True

    def _merge(self, xs):
        return functools.reduce(jnp.multiply, xs)


@export("loopax.layers.Average")
class Average(_Merge):
    """Elementwise mean of the inputs.

    Called on a list of two or more tensors of equal or broadcastable shapes; the
    output has their broadcast shape.

    Args:
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: (when called) fewer than two inputs, or shapes that do not broadcast.
    """

    row_wise = True

    def _merge(self, xs):
        return functools.reduce(jnp.add, xs) / len(xs)


@export("loopax.layers.Maximum")
class Maximum(_Merge):
    """Elementwise maximum of the inputs.

    Called on a list of two or more tensors of equal or broadcastable shapes; the
    output has their broadcast shape.

    Args:
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: (when called) fewer than two inputs, or shapes that do not broadcast.
    """

    row_wise = True

    def _merge(self, xs):
        return functools.reduce(jnp.maximum, xs)


@export("loopax.layers.Minimum")
class Minimum(_Merge):
    """Elementwise minimum of the inputs.

    Called on a list of two or more tensors of equal or broadcastable shapes; the
    output has their broadcast shape.

    Args:
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: (when called) fewer than two inputs, or shapes that do not broadcast.
    """

    row_wise = True

    def _merge(self, xs):
        return functools.reduce(jnp.minimum, xs)


@export("loopax.layers.Concatenate")
@closed_form_output_shape
class Concatenate(_Merge):
    """Joins the inputs along `axis`; all other sizes must match.

    Inputs `(batch, ..., n_i, ...)` -> output `(batch, ..., sum(n_i), ...)`.

    Args:
        axis: The axis to join along (default -1).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: (when called) fewer than two inputs, or ranks/sizes that differ off
            `axis`.
    """

    row_wise = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def _check_shapes(self, shapes):
        rank = len(shapes[0])
        ok = all(len(s) == rank for s in shapes) and -rank <= self.axis < rank
        if ok:
            axis = self.axis % rank
            ok = all(len({s[i] for s in shapes}) == 1 for i in range(rank) if i != axis)
        if not ok:
            raise ValueError(f"Concatenate {self.name!r}: inputs must have the same rank and "
                             f"the same sizes except on axis {self.axis}; got shapes {shapes}.")

    def _merge(self, xs):
        return jnp.concatenate(xs, axis=self.axis)

    def compute_output_shape(self, input_shape):
        """The first input's shape with the sizes along `axis` summed (None if one
        is unknown)."""
        shapes = [tuple(s) for s in _list_of_shapes(self, input_shape)]
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes) or not -rank <= self.axis < rank or any(
                len({s[i] for s in shapes} - {None}) > 1
                for i in range(rank) if i != self.axis % rank):
            self._check_shapes(shapes)   # raises, naming the shapes
        out = list(shapes[0])
        sizes = [s[self.axis] for s in shapes]
        out[self.axis] = None if None in sizes else sum(sizes)
        return tuple(out)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


def _list_of_shapes(layer, input_shape):
    """`input_shape` as a list of two or more shapes, or the ValueError `call` raises."""
    if not isinstance(input_shape, (list, tuple)) or not input_shape or not all(
            isinstance(s, (list, tuple)) for s in input_shape):
        raise ValueError(f"{type(layer).__name__} {layer.name!r} takes a list of input "
                         f"shapes, got {input_shape!r}.")
    if len(input_shape) < layer._min_inputs or (
            layer._max_inputs and len(input_shape) > layer._max_inputs):
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: wrong number of inputs "
                         f"({len(input_shape)}).")
    return list(input_shape)


def _broadcast_sizes(layer, a, b):
    """Broadcasts two shapes without the batch axis, right-aligned (Keras's rule
    for unknown sizes: None against anything is None)."""
    if len(a) < len(b):
        a, b = b, a
    lead, out = a[:len(a) - len(b)], []
    for i, j in zip(a[len(a) - len(b):], b):
        if i is None or j is None:
            out.append(None)
        elif i == 1 or j == 1 or i == j:
            out.append(j if i == 1 else i)
        else:
            raise ValueError(f"{type(layer).__name__} {layer.name!r}: inputs have "
                             f"incompatible shapes {a} and {b}.")
    return tuple(lead) + tuple(out)


@export("loopax.layers.add")
def add(inputs, **kwargs):
    """Functional form of `Add`: the sum of the inputs.

    Args:
        inputs: A list of two or more tensors of broadcastable shapes.
        **kwargs: Arguments of the `Add` layer (`name`, ...).

    Returns:
        The sum tensor, of the inputs' broadcast shape.
    """
    return Add(**kwargs)(inputs)


@export("loopax.layers.subtract")
def subtract(inputs, **kwargs):
    """Functional form of `Subtract`: `inputs[0] - inputs[1]`.

    Args:
        inputs: A list of exactly two tensors of broadcastable shapes.
        **kwargs: Arguments of the `Subtract` layer (`name`, ...).

    Returns:
        The difference tensor, of the inputs' broadcast shape.
    """
    return Subtract(**kwargs)(inputs)


@export("loopax.layers.multiply")
def multiply(inputs, **kwargs):
    """Functional form of `Multiply`: the elementwise product.

    Args:
        inputs: A list of two or more tensors of broadcastable shapes.
        **kwargs: Arguments of the `Multiply` layer (`name`, ...).

    Returns:
        The product tensor, of the inputs' broadcast shape.
    """
    return Multiply(**kwargs)(inputs)


@export("loopax.layers.average")
def average(inputs, **kwargs):
    """Functional form of `Average`: the elementwise mean.

    Args:
        inputs: A list of two or more tensors of broadcastable shapes.
        **kwargs: Arguments of the `Average` layer (`name`, ...).

    Returns:
        The mean tensor, of the inputs' broadcast shape.
    """
    return Average(**kwargs)(inputs)


@export("loopax.layers.maximum")
def maximum(inputs, **kwargs):
    """Functional form of `Maximum`: the elementwise maximum.

    Args:
        inputs: A list of two or more tensors of broadcastable shapes.
        **kwargs: Arguments of the `Maximum` layer (`name`, ...).

    Returns:
        The maximum tensor, of the inputs' broadcast shape.
    """
    return Maximum(**kwargs)(inputs)


@export("loopax.layers.minimum")
def minimum(inputs, **kwargs):
    """Functional form of `Minimum`: the elementwise minimum.

    Args:
        inputs: A list of two or more tensors of broadcastable shapes.
        **kwargs: Arguments of the `Minimum` layer (`name`, ...).

    Returns:
        The minimum tensor, of the inputs' broadcast shape.
    """
    return Minimum(**kwargs)(inputs)


@export("loopax.layers.concatenate")
def concatenate(inputs, axis=-1, **kwargs):
    """Functional form of `Concatenate`: joins the inputs along `axis`.

    Args:
        inputs: A list of two or more tensors of the same rank and the same sizes
            except on `axis`.
        axis: The axis to join along (default -1).
        **kwargs: Arguments of the `Concatenate` layer (`name`, ...).

    Returns:
        The joined tensor.
    """
    return Concatenate(axis=axis, **kwargs)(inputs)
