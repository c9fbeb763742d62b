"""`Sequential`: a model that is a plain stack of layers.

Once the input shape is known (an `Input`/`InputLayer` first, an
`input_shape=` on the first layer, `build(input_shape)`, or the first call on
data) the stack is wired into a functional graph, which every later call
replays. `layers` leaves out the `InputLayer`, as in Keras.
"""

from __future__ import annotations

from typing import Any, Sequence

from loopax.src import dtypes, serialization
from loopax.src.api_export import export
from loopax.src.layers.input_layer import InputLayer
from loopax.src.layers.layer import Layer
from loopax.src.layers.symbolic import SymbolicTensor
from loopax.src.models.functional import Functional
from loopax.src.models.model import Model


@export("loopax.models.Sequential")
@serialization.register_core_class
class Sequential(Model):
    """`Sequential([layer, ...], name=None)`: each layer feeds the next.

    Example:
        model = Sequential([loopax.Input(shape=(784,)), Dense(64, "relu"), Dense(10)])

    Args:
        layers: The layers, in order; the first may be a `loopax.Input` tensor, or a
            layer given `input_shape=`, which defines the input (else the first call or
            `build` does).
        trainable: Whether the model's weights train.
        name: The model's name.
        **kwargs: Further `Layer` arguments (`dtype`, ...).
    """

    row_wise = True

    # The wired graph: its layers are already owned through `_layers`.
    _untracked_attributes = Model._untracked_attributes | {"_graph"}
    # Inputs keep their dtype here: each layer casts them to its own compute
    # dtype (a functional model, to its Inputs' dtypes), as in Keras.
    _convert_input_args = False

    def __init__(self, layers: Sequence[Layer | SymbolicTensor] | None = None,
                 trainable: bool = True, name: str | None = None, **kwargs: Any):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self._layers = []
        self._graph = None
        for layer in layers or ():
            self.add(layer, rebuild=False)
        self._maybe_rebuild()

    # ---- editing -------------------------------------------------------------
    def add(self, layer: Layer | SymbolicTensor, rebuild: bool = True) -> None:
        """Appends a layer (or an `Input` tensor, first only).

        Args:
            layer: A `Layer`, or a `loopax.Input` tensor as the first entry.
            rebuild: Re-wire the graph now (False when adding several layers at once).

        Raises:
            TypeError: `layer` is not a layer or an Input tensor.
            ValueError: an Input comes after layers, or the layer (or its name) is already
                in the model.
        """
        if isinstance(layer, SymbolicTensor):
            if layer.node is None or not isinstance(layer.node.layer, InputLayer):
                raise TypeError(f"Sequential {self.name!r}.add() takes layers or a "
                                "loopax.Input(); got a symbolic tensor computed by a layer.")
            layer = layer.node.layer
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential {self.name!r}.add() takes a loopax Layer; got "
                            f"{type(layer).__name__} ({layer!r:.80}).")
        if isinstance(layer, InputLayer):
            if self._layers:
                raise ValueError(
                    f"Sequential {self.name!r}: an Input must be the first layer; this model "
                    f"already has {[l.name for l in self._layers]}.")
        elif not self._layers and layer._batch_input_shape is not None:
            self._layers.append(
                InputLayer(
                    batch_shape=layer._batch_input_shape,
                    dtype=layer.dtype if dtypes.is_int(layer.dtype) else None,
                )
            )
        if any(l is layer for l in self._layers):
            raise ValueError(f"Layer {layer.name!r} is already in Sequential {self.name!r}.")
        if any(l.name == layer.name for l in self._layers):
            raise ValueError(f"Sequential {self.name!r} already has a layer named "
                             f"{layer.name!r}; layer names must be unique within a model.")
        self._layers.append(layer)
        if rebuild:
            self._maybe_rebuild()

    def pop(self, rebuild: bool = True) -> Layer:
        """Removes and returns the last layer.

        Args:
            rebuild: Re-wire the graph now.

        Returns:
            The removed `Layer`.

        Raises:
            TypeError: the model has no layers.
        """
        if not self.layers:
            raise TypeError(f"Sequential {self.name!r} has no layers to pop.")
        layer = self._layers.pop()
        if rebuild:
            self._maybe_rebuild()
        return layer

    def _maybe_rebuild(self):
        self._graph = None
        if not self._layers or not isinstance(self._layers[0], InputLayer):
            self.built = False
            return
        inputs = x = self._layers[0].output
        with self._name_scope():   # the layers' paths are "sequential/d3", as Keras's
            self.__dict__["_path"] = self.scope_path
            for layer in self._layers[1:]:
                x = layer(x)
        if len(self._layers) > 1:
            self._graph = Functional(inputs, x, name=self.name)
        self.built = True

    # ---- building and calling ----------------------------------------------
    def _maybe_build(self, first_arg):
        if self.built:
            return
        shape = getattr(first_arg, "shape", None)
        if shape is None:
            raise ValueError(f"Sequential {self.name!r} takes one array input; got "
                             f"{type(first_arg).__name__}.")
        dtype = first_arg.dtype if dtypes.is_int(first_arg.dtype) else None
        self._build_input_shape = tuple(shape)
        self._add_input((None,) + tuple(shape[1:]), dtype)

    def build(self, input_shape: Sequence[int | None] | None = None) -> None:
        """Wires the layers for inputs of `input_shape` (batch size first).

        Args:
            input_shape: The input's shape, e.g. `(None, 784)`.

        Raises:
            ValueError: `input_shape` is None and the model has no Input.
        """
        if self.built:
            return
        if input_shape is None:
            raise ValueError(f"Sequential {self.name!r}.build() needs `input_shape`, e.g. "
                             "(None, 784), or an Input as the first layer.")
        self._build_input_shape = tuple(input_shape)
        self._add_input(tuple(input_shape), None)

    def _add_input(self, batch_shape, dtype):
        if self._layers and isinstance(self._layers[0], InputLayer):
            self._maybe_rebuild()
            return
        self._layers.insert(0, InputLayer(batch_shape=batch_shape, dtype=dtype))
        self._input_from_data = True   # sizes seen, not declared by an Input
        self._maybe_rebuild()

    def _widen_inferred_input(self, inputs):
        """A Sequential whose input shape came from its first batch (no Input),
        called on data of the same rank with other sizes: those sizes become
        None and the graph is re-wired (its layers keep their weights), as Keras
        runs it. The first call may be a probe of an enclosing layer's symbolic
        call (a Transformer block's feed-forward Sequential on a None length),
        whose probe size must not become a fixed size."""
        shape = getattr(inputs, "shape", None)
        declared = self._layers[0].batch_shape
        if shape is None or len(shape) != len(declared):
            return
        widened = (None,) + tuple(d if d == s else None
                                  for d, s in zip(declared[1:], tuple(shape)[1:]))
        if widened == tuple(declared):
            return
        self._layers[0] = InputLayer(batch_shape=widened, dtype=self._layers[0].output.dtype)
        self._maybe_rebuild()

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        """Runs the layers in order.

        Args:
            inputs: A batch, `(batch, ...)`.
            training: Passed to the layers that take it.
            mask: The inputs' mask, if any.

        Returns:
            The last layer's outputs.
        """
        if self._graph is not None:
            if self.__dict__.get("_input_from_data"):
                self._widen_inferred_input(inputs)
            return self._graph.call(inputs, mask=mask)
        for layer in self.layers:
            inputs = layer(inputs)
        return inputs

    def _layers_fed_inputs(self) -> list[tuple[int, Layer]]:
        """`[(0, first layer)]` once the model has its graph (see Functional's);
        empty when a subclass overrides `call`."""
        if type(self).call is not Sequential.call or self._graph is None:
            return []
        return self._graph._layers_fed_inputs()

    # ---- structure -----------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        """The layers, without the InputLayer."""
        return [l for l in self._layers if not isinstance(l, InputLayer)]

    def _graph_model(self):
        if self._graph is None and self.built:
            raise ValueError(f"Sequential {self.name!r} has no layers after its Input yet; "
                             "add() some.")
        if self._graph is None:
            raise ValueError(
                f"Sequential {self.name!r} has no defined input yet. Start it with "
                "loopax.Input(shape=...), give the first layer input_shape=, call "
                "build(input_shape) or call the model on a batch.")
        return self._graph

    @property
    def inputs(self):
        """The input tensors: a list of one symbolic tensor (raises while no input is defined)."""
        return self._graph_model().inputs

    @property
    def outputs(self):
        """The output tensors: a list of one symbolic tensor."""
        return self._graph_model().outputs

    @property
    def input(self):
        """The symbolic input tensor."""
        return self._graph_model().input

    @property
    def output(self):
        """The symbolic output tensor."""
        return self._graph_model().output

    @property
    def input_names(self):
        """The input's name, in a list."""
        return self._graph_model().input_names

    @property
    def output_names(self):
        """The name of the last layer, in a list."""
        return self._graph_model().output_names

    @property
    def input_shape(self):
        """The input's shape, batch dimension (None) first."""
        return self._graph_model().inputs[0].shape

    @property
    def output_shape(self):
        """The output's shape, batch dimension (None) first."""
        return self._graph_model().outputs[0].shape

    # ---- config --------------------------------------------------------------
    def get_config(self) -> dict:
        """The model's name, trainable flag and each layer's serialized config.

        Returns:
            A JSON-serializable dict (the Input included as its first layer).
        """
        return {"name": self.name, "trainable": self.trainable,
                "layers": [serialization.serialize(l) for l in self._layers]}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Sequential:
        """Re-creates a Sequential model from `get_config()`'s dict.

        Args:
            config: The dict `get_config` returned.
            custom_objects: `{name: class or function}` for custom layers in the config.

        Returns:
            A new `Sequential`.
        """
        with serialization.custom_object_scope(custom_objects or {}):
            layers = [serialization.deserialize(c) for c in config["layers"]]
        model = cls(name=config.get("name"), trainable=config.get("trainable", True))
        for layer in layers:
            model.add(layer, rebuild=False)
        model._maybe_rebuild()
        return model
