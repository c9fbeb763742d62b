"""`InputLayer`: the layer behind `loopax.Input`."""

import warnings

from loopax.src import dtypes
from loopax.src.api_export import export
from loopax.src.layers import op_layer  # noqa: F401  (installs ops' symbolic fallback)
from loopax.src.layers.layer import Layer
from loopax.src.layers.symbolic import Node, SymbolicTensor
from loopax.src.naming import unique_name
from loopax.src.serialization import register_core_class


@export("loopax.layers.InputLayer")
@register_core_class
class InputLayer(Layer):
    """Produces the symbolic input tensor of a functional model.

    Args:
        shape: The shape of one example (without the batch size); an int means `(int,)`.
        batch_size: A fixed batch size, or None.
        dtype: The input's dtype (default the global float dtype).
        name: The layer's name.
        batch_shape: The full shape, batch dimension included (instead of `shape`).
        input_shape: An alias of `shape` (Keras 2).
        input_tensor: An existing symbolic tensor this layer produces from now on (its
            shape and dtype; the arguments above, when given, must agree with them).
        **kwargs: Further `Layer` arguments.

    Raises:
        ValueError: neither `shape` nor `batch_shape` is given, both are (or
            `batch_size` with `batch_shape`), or an argument disagrees with
            `input_tensor`.
    """

    row_wise = True

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None,
                 batch_shape=None, input_shape=None, input_tensor=None, **kwargs):
        if input_shape is not None and shape is None:
            shape = input_shape
        if isinstance(shape, int):
            shape = (shape,)
        if input_tensor is not None:
            batch_shape, dtype = _from_tensor(input_tensor, shape, batch_size, batch_shape, dtype)
        elif batch_shape is None:
            if shape is None:
                raise ValueError("Input needs `shape=` (without the batch size), "
                                 "e.g. loopax.Input(shape=(784,)).")
            batch_shape = (batch_size,) + tuple(shape)
        elif shape is not None or batch_size is not None:
            given = "shape" if shape is not None else "batch_size"
            raise ValueError(
                f"Input got both `{given}` and `batch_shape={tuple(batch_shape)}`; pass "
                "one: `batch_shape` is the full shape, batch size included.")
        # The global dtype policy, as Keras's InputLayer; `dtype` is the tensor's.
        super().__init__(name=name or unique_name("input_layer"), **kwargs)
        self._input_dtype = dtypes.standardize(dtype) if dtype is not None else \
            dtypes.standardize(self.dtype_policy.variable_dtype)
        self.batch_shape = tuple(batch_shape)
        tensor = input_tensor
        if tensor is None:
            tensor = SymbolicTensor(self.batch_shape, dtype, name=self.name)
        tensor.node = Node(self, (), {}, tensor)
        self._inbound_nodes = [tensor.node]   # `output` reads it (see Layer.output)
        self.built = True

    @property
    def dtype(self) -> str:
        """The input tensor's dtype (`int32` for token ids), not the dtype policy's."""
        return self._input_dtype

    def call(self, inputs):
        return inputs

    def get_config(self):
        return {"name": self.name, "batch_shape": self.batch_shape, "dtype": self.dtype}


def _from_tensor(tensor, shape, batch_size, batch_shape, dtype):
    """`(batch_shape, dtype)` of `tensor` (an `Input(tensor=...)`), checking that the
    other arguments given agree with it."""
    if not isinstance(tensor, SymbolicTensor):
        raise ValueError(f"Input(tensor=...) takes a symbolic tensor (an Input or a layer's "
                         f"output in a functional model), got {type(tensor).__name__}.")
    disagree = [(name, value) for name, value, ok in (
        ("shape", shape, shape is None or tuple(shape) == tensor.shape[1:]),
        ("batch_size", batch_size, batch_size is None or tensor.shape[:1] == (batch_size,)),
        ("batch_shape", batch_shape, batch_shape is None or tuple(batch_shape) == tensor.shape),
        ("dtype", dtype, dtype is None or dtypes.standardize(dtype) == tensor.dtype)) if not ok]
    if disagree:
        name, value = disagree[0]
        raise ValueError(f"Input(tensor=...): `{name}={value!r}` disagrees with the tensor's "
                         f"shape {tensor.shape} and dtype {tensor.dtype}; leave it out.")
    return tensor.shape, tensor.dtype


@export("loopax.layers.Input")
def Input(shape=None, batch_size=None, dtype=None, sparse=None, ragged=None, batch_shape=None,
          name=None, tensor=None, optional=False):
    """A symbolic input of shape `(batch_size, *shape)` for functional models.

    The arguments are Keras's, in Keras's order.

    Args:
        shape: The shape of one example, without the batch size (`(784,)`); None sizes
            are variable.
        batch_size: A fixed batch size, or None.
        dtype: The input's dtype (default the global float dtype).
        sparse: True warns: loopax's inputs are dense (feed dense arrays).
        ragged: False or None (JAX has no ragged tensors, as in Keras on JAX).
        batch_shape: The full shape, batch dimension included (instead of `shape`).
        name: The name of the `InputLayer` behind it.
        tensor: An existing symbolic tensor to use as the input (returned, now produced
            by the new `InputLayer`).
        optional: False (inputs that accept None are not supported).

    Returns:
        A symbolic tensor to call layers on.

    Raises:
        ValueError: neither `shape` nor `batch_shape` is given, both are, an argument
            disagrees with `tensor`, or `ragged`/`optional` is True.
    """
    if ragged:
        raise ValueError("Input(ragged=True): ragged tensors are not supported on JAX (nor "
                         "by Keras on JAX); pad the sequences and use a mask.")
    if sparse:
        warnings.warn("Input(sparse=True): loopax has no sparse inputs; this input is dense "
                      "(feed dense arrays, or leave `sparse` out).", stacklevel=2)
    if optional:
        raise ValueError("Input(optional=True) is not supported: loopax's functional models "
                         "need every input; pass zeros and a flag input instead.")
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, name=name,
                       batch_shape=batch_shape, input_tensor=tensor)
    return layer.output
