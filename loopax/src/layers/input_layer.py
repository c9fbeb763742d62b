"""`InputLayer`: the layer behind `loopax.Input`."""

from loopax.src.layers import op_layer  # noqa: F401  (installs ops' symbolic fallback)
from loopax.src.layers.layer import Layer
from loopax.src.layers.symbolic import Node, SymbolicTensor
from loopax.src.serialization import register_core_class
from loopax.src.state import unique_name


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
        **kwargs: Further `Layer` arguments.

    Raises:
        ValueError: neither `shape` nor `batch_shape` is given.
    """

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None,
                 batch_shape=None, input_shape=None, **kwargs):
        if input_shape is not None and shape is None:
            shape = input_shape
        if batch_shape is None:
            if shape is None:
                raise ValueError("Input needs `shape=` (without the batch size), "
                                 "e.g. loopax.Input(shape=(784,)).")
            if isinstance(shape, int):
                shape = (shape,)
            batch_shape = (batch_size,) + tuple(shape)
        super().__init__(name=name or unique_name("input_layer"), dtype=dtype, **kwargs)
        self.batch_shape = tuple(batch_shape)
        tensor = SymbolicTensor(self.batch_shape, dtype, name=self.name)
        tensor.node = Node(self, (), {}, tensor)
        self._inbound_nodes = [tensor.node]   # `output` reads it (see Layer.output)
        self.built = True

    def call(self, inputs):
        return inputs

    def get_config(self):
        return {"name": self.name, "batch_shape": self.batch_shape, "dtype": self.dtype}


def Input(shape=None, batch_size=None, dtype=None, name=None, batch_shape=None, sparse=False):
    """A symbolic input of shape `(batch_size, *shape)` for functional models.

    Args:
        shape: The shape of one example, without the batch size (`(784,)`); None sizes
            are variable.
        batch_size: A fixed batch size, or None.
        dtype: The input's dtype (default the global float dtype).
        name: The name of the `InputLayer` behind it.
        batch_shape: The full shape, batch dimension included (instead of `shape`).
        sparse: Accepted for Keras compatibility; sparse inputs are not supported.

    Returns:
        A symbolic tensor to call layers on.

    Raises:
        ValueError: neither `shape` nor `batch_shape` is given.
    """
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, name=name,
                       batch_shape=batch_shape)
    return layer.output
