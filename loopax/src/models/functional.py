"""`Functional`: a model that replays a graph of layer calls.

`Model(inputs, outputs)` walks back from `outputs` through the `Node`s that
symbolic layer calls recorded (see `loopax.src.layers.symbolic`) to the
`Input`s, and orders them as Keras does: by depth from the outputs, deepest
first, ties broken by discovery order. `layers` lists each layer once in that
order (the `InputLayer`s included); calling the model on arrays runs the nodes
in that order, so a shared layer runs once per call site and a nested model
runs as one layer.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.layers.input_layer import InputLayer
from loopax.src.layers.layer import Layer
from loopax.src.layers.masking import set_keras_mask
from loopax.src.layers.symbolic import SymbolicTensor, is_symbolic
from loopax.src.models.model import Model


@export("loopax.models.Functional")
@serialization.register_core_class
class Functional(Model):
    """A model defined by symbolic `inputs` and `outputs` (tensors, or lists or dicts of them).

    Args:
        inputs: tensor(s) from `loopax.Input`: one, a list, or a dict whose keys
            name the entries of dict data passed to the model.
        outputs: tensor(s) computed from `inputs` by calling layers.
        name: the model's name.
        trainable: whether the model's weights train.
        **kwargs: further `Layer` arguments (`dtype`, ...).

    Raises:
        ValueError: `inputs` or `outputs` is empty, an input does not come from
            `loopax.Input`, or the outputs depend on an Input missing from `inputs`.
        TypeError: an input or output is not a symbolic tensor.
    """

    row_wise = True

    # Inputs keep their dtype here: each layer casts them to its own compute
    # dtype (a functional model, to its Inputs' dtypes), as in Keras.
    _convert_input_args = False

    def __init__(self, inputs: Any, outputs: Any, name: str | None = None,
                 trainable: bool = True, **kwargs: Any):
        Model.__init__(self, name=name, trainable=trainable, **kwargs)
        flat_inputs = jax.tree_util.tree_leaves(inputs, is_leaf=is_symbolic)
        flat_outputs, self._outputs_treedef = jax.tree_util.tree_flatten(
            outputs, is_leaf=is_symbolic
        )
        _check_tensors(flat_inputs, "inputs", self.name)
        _check_tensors(flat_outputs, "outputs", self.name)
        for t in flat_inputs:
            if not isinstance(t.node.layer, InputLayer):
                raise ValueError(
                    f"Model {self.name!r}: every input must come from loopax.Input(); "
                    f"{t} was produced by layer {t.node.layer.name!r}. Make a "
                    "loopax.Input for it, or build the model from the earlier Input.")
        self._inputs_struct = inputs
        self._outputs_struct = outputs
        self.inputs = flat_inputs
        self.outputs = flat_outputs
        self._input_keys = _input_keys(inputs, flat_inputs)
        self._nodes, self._layers = _map_graph(flat_inputs, flat_outputs, self.name)
        self._programs = [_NodeProgram(node) for node in self._nodes]
        self.__dict__["_path"] = self.scope_path   # built where made, as Keras's
        self.built = True

    # ---- structure -----------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        """Every layer once, in graph order, the InputLayers included."""
        return list(self._layers)

    @property
    def input(self):
        """The `inputs` as given: one symbolic tensor, or a list or dict of them."""
        return self._inputs_struct

    @property
    def output(self):
        """The `outputs` as given: one symbolic tensor, or a list or dict of them."""
        return self._outputs_struct

    @property
    def input_shape(self):
        """The inputs' shapes: one tuple, or a list in `inputs` order (as Keras)."""
        shapes = [t.shape for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        """The outputs' shapes: one tuple, or a list in `outputs` order (as Keras)."""
        shapes = [t.shape for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def input_names(self) -> list[str]:
        """The inputs' names: dict keys for dict inputs, else the Input layers' names."""
        return list(self._input_keys)

    @property
    def output_names(self) -> list[str]:
        """Dict keys for dict outputs, else the names of the layers producing them."""
        if isinstance(self._outputs_struct, dict):
            return [str(k) for k in jax.tree_util.tree_flatten(
                {k: k for k in self._outputs_struct})[0]]
        return [t.node.layer.name for t in self.outputs]

    def _layers_fed_inputs(self) -> list[tuple[int, Layer]]:
        """`[(input position, layer)]` for each call of a layer on one of the model's
        inputs as given (its first argument), so `fit()`'s data checks know what such
        a layer receives. Empty when a subclass overrides `call` (it may feed the
        layers anything)."""
        if type(self).call is not Functional.call:
            return []
        positions = {id(t): i for i, t in enumerate(self.inputs)}
        return [(positions[id(node.args[0])], node.layer) for node in self._nodes
                if node.args and is_symbolic(node.args[0]) and id(node.args[0]) in positions]

    def build(self, input_shape: Any = None) -> None:
        """Does nothing: a functional model is built when made.

        Args:
            input_shape: Ignored.
        """
        self.built = True

    # ---- call ------------------------------------------------------------------
    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        """Runs the graph on `inputs`.

        Args:
            inputs: Data in the structure of the model's `inputs` (one array, a list, or a
                dict keyed by input name).
            training: Passed to the layers that take it.
            mask: Masks for the inputs (one, or a list aligned with them), or None.

        Returns:
            The outputs, in the structure of the model's `outputs` (a one-element list
            gives the array itself, as in Keras).
        """
        flat = self._standardize_inputs(inputs)
        if mask is not None:   # masks for the inputs reach the layers that read them
            for x, m in zip(flat, mask if isinstance(mask, (list, tuple)) else [mask]):
                if m is not None:
                    set_keras_mask(x, m)
        values = {id(t): x for t, x in zip(self.inputs, flat)}
        for program in self._programs:
            program.run(values)
        outputs = [values[id(t)] for t in self.outputs]
        outputs = jax.tree_util.tree_unflatten(self._outputs_treedef, outputs)
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            return outputs[0]   # as Keras: outputs=[y] gives y
        return outputs

    def _warn_unused_input_keys(self, unknown, keys):
        """Keras ignores dict entries no Input is named after (a structured-data
        example passes its whole feature dict) and warns; so does loopax, once
        per model and set of keys (a compiled step traces the call once)."""
        warned = self.__dict__.setdefault("_unused_input_keys_warned", set())
        key = tuple(sorted(map(str, unknown)))
        if key in warned:
            return
        warned.add(key)
        warnings.warn(
            f"Model {self.name!r} got dict inputs with keys {list(key)} that none of its "
            f"inputs {keys} is named after; they are ignored (as Keras does). Remove them "
            "from the data, or add a loopax.Input(name=...) for each to use them.",
            stacklevel=4)

    def _standardize_inputs(self, inputs) -> list:
        """Data for the model's inputs as a flat list aligned with `self.inputs`:
        dicts matched by key, arrays cast to each Input's dtype, ranks adjusted
        as Keras does for a trailing size-1 axis, shapes checked."""
        n = len(self.inputs)
        if isinstance(inputs, dict):
            keys = self._input_keys
            unknown = [k for k in inputs if k not in keys]
            missing = [k for k in keys if k not in inputs]
            if missing:
                raise ValueError(
                    f"Model {self.name!r} got dict inputs with keys {sorted(map(str, inputs))}, "
                    f"but its inputs are named {keys}" +
                    (f"; unknown: {unknown}" if unknown else "") + f"; missing: {missing}" +
                    ". Use the names given to loopax.Input(name=...) (or the keys of a "
                    "dict of Inputs) as keys.")
            if unknown:
                self._warn_unused_input_keys(unknown, keys)
            flat = [inputs[k] for k in keys]
        elif _is_nested(self._inputs_struct) and isinstance(inputs, (list, tuple)):
            flat = _flatten_like(self._inputs_struct, inputs, self.name)
        elif isinstance(inputs, (list, tuple)) and not _is_plain_data(inputs, n):
            if len(inputs) != n:
                raise ValueError(
                    f"Model {self.name!r} takes {n} input(s) {self._input_keys}, but was "
                    f"called with a {type(inputs).__name__} of {len(inputs)}. Pass one "
                    "array per input, in that order, or a dict keyed by those names.")
            flat = list(inputs)
        elif n == 1:
            flat = [inputs]
        else:
            raise ValueError(
                f"Model {self.name!r} takes {n} inputs {self._input_keys}, but was called "
                "with a single array. Pass a list of arrays in that order, or a dict "
                "keyed by those names.")
        return [_conform(x, ref, key, self.name)
                for x, ref, key in zip(flat, self.inputs, self._input_keys)]

    # ---- config --------------------------------------------------------------
    def get_config(self) -> dict:
        """A JSON-able description of the graph: each layer's class and config
        with the tensors each of its calls took, and the input/output tensors.

        Returns:
            A JSON-serializable dict that `Model.from_config` turns back into this graph.
        """
        node_key = {}
        node_count = {}
        calls = {}
        for node in [t.node for t in self.inputs] + self._nodes:
            if id(node) in node_key:
                continue
            k = node_count.get(id(node.layer), 0)
            node_count[id(node.layer)] = k + 1
            node_key[id(node)] = (node.layer.name, k)
            calls.setdefault(id(node.layer), []).append(node)

        def encode(value, where):
            if is_symbolic(value):
                name, k = node_key[id(value.node)]
                return {"__tensor__": [name, k, value.index]}
            if isinstance(value, tuple):
                return {"__tuple__": [encode(v, where) for v in value]}
            if isinstance(value, list):
                return [encode(v, where) for v in value]
            if isinstance(value, dict):
                return {"__dict__": {str(k): encode(v, where) for k, v in value.items()}}
            if isinstance(value, (np.generic,)):
                return value.item()
            if value is None or isinstance(value, (bool, int, float, str)):
                return value
            raise ValueError(
                f"Model {self.name!r} cannot describe {where} in a config: an argument "
                f"of type {type(value).__name__} ({value!r:.80}) is not a tensor or a "
                "plain value. Pass such values to the layer's constructor instead.")

        layers = []
        for layer in self._layers:
            entry = serialization.serialize(layer)
            entry["name"] = layer.name
            entry["inbound_nodes"] = [] if isinstance(layer, InputLayer) else [
                {"args": encode(list(node.args), f"a call of layer {layer.name!r}"),
                 "kwargs": encode(dict(node.kwargs), f"a call of layer {layer.name!r}")["__dict__"]}
                for node in calls[id(layer)]]
            layers.append(entry)
        return {"name": self.name, "trainable": self.trainable, "layers": layers,
                "input_layers": encode(self._inputs_struct, "the inputs"),
                "output_layers": encode(self._outputs_struct, "the outputs")}


class _NodeProgram:
    """One node's call, with the positions of its symbolic arguments
    precomputed so running it is a few list assignments."""

    def __init__(self, node):
        self.layer = node.layer
        leaves, self.treedef = jax.tree_util.tree_flatten((node.args, node.kwargs),
                                                          is_leaf=is_symbolic)
        self.template = leaves
        self.slots = [(i, id(t)) for i, t in enumerate(leaves) if is_symbolic(t)]
        self.out_treedef = jax.tree_util.tree_structure(node.outputs, is_leaf=is_symbolic)
        self.out_ids = [id(t) for t in node.output_tensors]

    def run(self, values):
        leaves = list(self.template)
        for i, tid in self.slots:
            leaves[i] = values[tid]
        args, kwargs = jax.tree_util.tree_unflatten(self.treedef, leaves)
        outputs = self.layer(*args, **kwargs)
        try:
            flat = self.out_treedef.flatten_up_to(outputs)
        except (ValueError, TypeError) as e:
            raise ValueError(
                f"Layer {self.layer.name!r} returned a different structure on data than it "
                f"did on symbolic inputs ({self.out_treedef}): {e}") from None
        for tid, value in zip(self.out_ids, flat):
            values[tid] = value


# --------------------------------------------------------------------------
# Graph
# --------------------------------------------------------------------------

def _check_tensors(flat, what, model_name):
    if not flat:
        raise ValueError(f"Model {model_name!r}: `{what}` is empty.")
    for t in flat:
        if not isinstance(t, SymbolicTensor):
            raise TypeError(
                f"Model {model_name!r}: `{what}` must be symbolic tensors (from loopax.Input "
                f"and layers called on them), got {type(t).__name__}.")
        if t.node is None:
            raise ValueError(f"Model {model_name!r}: {t} in `{what}` was not produced by "
                             "a layer call or loopax.Input.")


def _input_keys(inputs, flat_inputs) -> list[str]:
    """How dict data names each input: the dict keys, else the Input names."""
    if isinstance(inputs, dict):
        keys = list(inputs)
        return [str(k) for k in jax.tree_util.tree_flatten({k: k for k in keys})[0]]
    return [t.node.layer.name for t in flat_inputs]


def _map_graph(inputs, outputs, model_name):
    """(nodes to run in order, layers in order) for the graph inputs -> outputs."""
    input_ids = {id(t) for t in inputs}
    finished, in_progress = set(), set()
    post_order = []          # nodes, each after the nodes it reads from
    layer_index = {}         # id(layer) -> discovery order

    # Iterative depth-first search from the outputs (deep graphs must not
    # hit Python's recursion limit).
    for out in outputs:
        stack = [(out, False)]
        while stack:
            tensor, expanded = stack.pop()
            node = tensor.node
            if expanded:
                in_progress.discard(id(node))
                finished.add(id(node))
                post_order.append(node)
                continue
            if id(node) in finished:
                continue
            if id(node) in in_progress:
                raise ValueError(f"Model {model_name!r}: the graph has a cycle through "
                                 f"layer {node.layer.name!r}.")
            layer_index.setdefault(id(node.layer), len(layer_index))
            in_progress.add(id(node))
            stack.append((tensor, True))
            if isinstance(node.layer, InputLayer):
                if id(tensor) not in input_ids:
                    raise ValueError(
                        f"Model {model_name!r}: the outputs depend on Input "
                        f"{node.layer.name!r}, which is not in `inputs`. Add it to inputs.")
                continue
            for t in reversed(node.input_tensors):
                if t.node is None:
                    raise ValueError(f"Model {model_name!r}: layer {node.layer.name!r} was "
                                     f"called on {t}, which no layer produced.")
                stack.append((t, False))

    node_depth, layer_depth = {}, {}
    for node in reversed(post_order):
        depth = max(node_depth.get(id(node), 0), layer_depth.get(id(node.layer), 0))
        node_depth[id(node)] = depth
        layer_depth[id(node.layer)] = depth
        if not isinstance(node.layer, InputLayer):
            for t in node.input_tensors:
                parent = id(t.node)
                node_depth[parent] = max(depth + 1, node_depth.get(parent, 0))

    position = {id(n): i for i, n in enumerate(post_order)}
    nodes = sorted((n for n in post_order if not isinstance(n.layer, InputLayer)),
                   key=lambda n: (-node_depth[id(n)], position[id(n)]))
    layers_by_id = {}
    for node in post_order:
        layers_by_id.setdefault(id(node.layer), node.layer)
    for t in inputs:   # an Input the outputs don't use still belongs to the model
        if id(t.node.layer) not in layers_by_id:
            layers_by_id[id(t.node.layer)] = t.node.layer
            layer_depth[id(t.node.layer)] = 1 << 30
            layer_index[id(t.node.layer)] = -1
    layers = sorted(layers_by_id.values(),
                    key=lambda l: (-layer_depth[id(l)], layer_index[id(l)]))

    names = [layer.name for layer in layers]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"Model {model_name!r}: layer names must be unique within a model; "
                         f"{dupes} occur more than once. Give the layers distinct `name=`s.")
    return nodes, layers


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------

def _is_nested(structure) -> bool:
    """Whether `structure` (the model's `inputs`) is a list/tuple holding lists, tuples or
    dicts (`Model([[a, b], c], ...)`)."""
    return isinstance(structure, (list, tuple)) and any(
        isinstance(s, (list, tuple, dict)) for s in structure)


def _flatten_like(structure, inputs, model_name) -> list:
    """Nested data `inputs` flattened as the nested `structure` of Inputs (lists and
    tuples alike), or a clear error."""
    want = jax.tree_util.tree_structure(_tuples_to_lists(structure), is_leaf=is_symbolic)
    try:
        return want.flatten_up_to(_tuples_to_lists(inputs))
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"Model {model_name!r} takes nested inputs {want}; the data given does not "
            f"have that structure ({error}). Pass the arrays nested as the Inputs were "
            "given to Model(inputs=...).") from None


def _tuples_to_lists(tree):
    if isinstance(tree, (list, tuple)):
        return [_tuples_to_lists(t) for t in tree]
    if isinstance(tree, dict):
        return {k: _tuples_to_lists(v) for k, v in tree.items()}
    return tree


def _is_plain_data(inputs, n_inputs) -> bool:
    """A list of numbers for a single-input model (not a list of arrays)."""
    return n_inputs == 1 and not (len(inputs) == 1 and hasattr(inputs[0], "shape"))


def _conform(x, ref: SymbolicTensor, key, model_name):
    """`x` as an array of `ref`'s dtype and rank, or a clear error."""
    if not hasattr(x, "shape") or isinstance(x, np.ndarray):
        x = jnp.asarray(x)
    if x.dtype != ref.dtype:
        x = jnp.asarray(x).astype(ref.dtype)
    want = ref.shape
    shape = tuple(x.shape)
    if len(shape) == len(want) + 1 and shape[-1] == 1:
        x = jnp.squeeze(jnp.asarray(x), -1)
    elif len(shape) == len(want) - 1 and want[-1] == 1:
        x = jnp.expand_dims(jnp.asarray(x), -1)
    shape = tuple(x.shape)
    if len(shape) != len(want) or any(w is not None and s != w for s, w in zip(shape, want)):
        hint = ""
        if len(shape) == len(want) - 1:
            hint = " Did you forget the batch dimension? Add one, e.g. x[None]."
        raise ValueError(
            f"Input {key!r} of model {model_name!r} expects shape {want} (None: any size), "
            f"but got data of shape {shape}.{hint}")
    return x


# --------------------------------------------------------------------------
# From config
# --------------------------------------------------------------------------

def is_functional_config(config) -> bool:
    return isinstance(config, dict) and "layers" in config and "output_layers" in config


class _NotYet(Exception):
    pass


def functional_from_config(cls, config, custom_objects=None):
    """Re-creates the layers of `config` and calls them as recorded."""
    tensors = {}
    pending = []
    with serialization.custom_object_scope(custom_objects or {}):
        for entry in config["layers"]:
            layer = serialization.deserialize(entry)
            if isinstance(layer, InputLayer):
                tensors[(entry["name"], 0, 0)] = layer.output
            for k, call in enumerate(entry.get("inbound_nodes", [])):
                pending.append((layer, entry["name"], k, call))

        def decode(value):
            if isinstance(value, list):
                return [decode(v) for v in value]
            if isinstance(value, dict):
                if "__tensor__" in value:
                    key = tuple(value["__tensor__"])
                    if key not in tensors:
                        raise _NotYet(key)
                    return tensors[key]
                if "__tuple__" in value:
                    return tuple(decode(v) for v in value["__tuple__"])
                if "__dict__" in value:
                    return {k: decode(v) for k, v in value["__dict__"].items()}
                raise ValueError(f"Unrecognized entry {value!r} in a functional model config.")
            return value

        while pending:
            waiting = []
            for item in pending:
                layer, name, k, call = item
                try:
                    args = decode(call["args"])
                    kwargs = {key: decode(v) for key, v in call["kwargs"].items()}
                except _NotYet:
                    waiting.append(item)
                    continue
                outputs = layer(*args, **kwargs)
                for i, t in enumerate(jax.tree_util.tree_leaves(outputs, is_leaf=is_symbolic)):
                    tensors[(name, k, i)] = t
            if len(waiting) == len(pending):
                raise ValueError(
                    "The model config refers to tensors that no layer in it produces; "
                    f"stuck at layer calls {[(n, k) for _, n, k, _ in waiting]}.")
            pending = waiting

        try:
            inputs = decode(config["input_layers"])
            outputs = decode(config["output_layers"])
        except _NotYet as e:
            raise ValueError(f"The model config names tensor {e.args[0]} as an input or "
                             "output, but no layer in it produces that tensor.") from None
        kwargs = {}
        if "trainable" in config:
            kwargs["trainable"] = config["trainable"]
        return cls(inputs=inputs, outputs=outputs, name=config.get("name"), **kwargs)
