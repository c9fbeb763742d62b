"""`plot_model` / `model_to_dot`: a model's layer graph drawn with Graphviz.

Needs the optional extra `plot` (`pip install "loopax[plot]"`: pydot) and the
Graphviz `dot` program for rendering (`apt-get install graphviz`); without
them the functions raise Keras's ImportError. Each layer is a box (name,
class, optionally activation, input/output shapes, output dtype, trainable);
edges follow the functional graph. A Sequential model is a chain; a
subclassed model, whose graph is Python code, is one box. With
`expand_nested=True` nested Functional/Sequential models are drawn as
dashed clusters and the edges reach the layers inside them.
"""

from __future__ import annotations

import os
import sys

import jax

from loopax.src.api_export import export
from loopax.src.layers.symbolic import is_symbolic
from loopax.src.models.functional import Functional
from loopax.src.models.sequential import Sequential

_NO_PYDOT = "You must install pydot (`pip install pydot`) for {} to work."
_NO_GRAPHVIZ = ("You must install graphviz (see instructions at "
                "https://graphviz.gitlab.io/download/) for `plot_model` to work.")
_EXTRA = " (pydot comes with the extra: pip install \"loopax[plot]\")"


def _pydot():
    try:
        import pydot
    except ImportError:
        return None
    return pydot


def _graphviz_works(pydot) -> bool:
    """Whether Graphviz's `dot` runs (it renders an empty graph)."""
    try:
        pydot.Dot.create(pydot.Dot())
        return True
    except (OSError, pydot.PydotException):
        return False


def _in_notebook() -> bool:
    return "IPython.core.magics.namespace" in sys.modules


def _check_built(model):
    if not model.built:
        raise ValueError(f"Model {model.name!r} has not been built yet, so it has no graph "
                         "to draw: call it on a batch or call build(input_shape) first.")


# --------------------------------------------------------------------------
# Boxes
# --------------------------------------------------------------------------

def _describe(value, attribute):
    """Shape (or dtype) of a layer's input/output tensors as text; "?" if unknown."""
    try:
        tensors = getattr(value, attribute[0])
    except (AttributeError, ValueError):
        return "?"
    leaves = jax.tree_util.tree_map(lambda t: getattr(t, attribute[1]), tensors,
                                    is_leaf=is_symbolic)
    if isinstance(leaves, dict):
        return ", ".join(f"{k}: {v}" for k, v in leaves.items())
    return str(leaves).replace("{", "").replace("}", "")


def _activation_name(layer):
    activation = layer.activation
    return getattr(activation, "name", None) or getattr(activation, "__name__", None) \
        or str(activation)


def _cell(text, background="white", color=None, bold=True, span=None):
    font = f'<font point-size="14"{f" color={chr(34)}{color}{chr(34)}" if color else ""}>'
    body = f"<b>{text}</b>" if bold else text
    colspan = f' colspan="{span}"' if span else ""
    return f'<td bgcolor="{background}"{colspan}>{font}{body}</font></td>'


def _label(layer, show_shapes, show_dtype, show_layer_names, show_layer_activations,
           show_trainable) -> str:
    """The box of one layer: an HTML-like Graphviz table."""
    class_name = type(layer).__name__
    cells = []
    if show_shapes:
        if class_name != "InputLayer":
            cells.append(_cell("Input shape: <b>" + _describe(layer, ("input", "shape"))
                               + "</b>", bold=False))
        cells.append(_cell("Output shape: <b>" + _describe(layer, ("output", "shape"))
                           + "</b>", bold=False))
    if show_dtype:
        cells.append(_cell("Output dtype: <b>" + _describe(layer, ("output", "dtype"))
                           + "</b>", bold=False))
    if show_trainable and layer.weights:
        if layer.trainable:
            cells.append(_cell("Trainable", "forestgreen", "white"))
        else:
            cells.append(_cell("Non-trainable", "firebrick", "white"))
    width = max(1, len(cells))
    title = f"<b>{layer.name}</b> ({class_name})" if show_layer_names else f"<b>{class_name}</b>"
    rows = [f'<tr><td colspan="{width}" bgcolor="black"><font point-size="16" '
            f'color="white">{title}</font></td></tr>']
    if show_layer_activations and getattr(layer, "activation", None) is not None:
        rows.append(f'<tr><td bgcolor="white" colspan="{width}"><font point-size="14">'
                    f"Activation: <b>{_activation_name(layer)}</b></font></td></tr>")
    if cells:
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return ('<<table border="0" cellborder="1" bgcolor="black" cellpadding="10">'
            + "".join(rows) + "</table>>")


def _box(pydot, layer, options):
    node = pydot.Node(str(id(layer)), label=_label(layer, **options))
    for key, value in (("fontname", "Helvetica"), ("border", "0"), ("margin", "0")):
        node.set(key, value)
    return node


def _connect(dot, pydot, source, destination):
    ids = str(id(source)), str(id(destination))
    if not dot.get_edge(*ids):
        edge = pydot.Edge(*ids)
        edge.set("penwidth", "2")
        dot.add_edge(edge)


# --------------------------------------------------------------------------
# Graphs
# --------------------------------------------------------------------------

def _is_graph_model(layer) -> bool:
    return isinstance(layer, (Functional, Sequential))


def _exit_layer(layer, index):
    """The innermost layer that produces output `index` of a (nested) model."""
    while _is_graph_model(layer):
        tensor = layer.outputs[index]
        layer, index = tensor.node.layer, tensor.index
    return layer


def _entry_layer(layer, index):
    """The innermost layer that receives input `index` of a (nested) model."""
    while _is_graph_model(layer):
        if isinstance(layer, Functional):
            layer = layer.inputs[index].node.layer
        else:
            layer = layer.layers[0]
    return layer


def _edges(model):
    """(source layer, output index, destination layer, input index) of each graph edge."""
    if isinstance(model, Sequential):
        layers = model.layers
        return [(a, 0, b, 0) for a, b in zip(layers, layers[1:])]
    return [(tensor.node.layer, tensor.index, node.layer, position)
            for node in model._nodes
            for position, tensor in enumerate(node.input_tensors)]


@export("loopax.utils.model_to_dot")
def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=200, subgraph=False,
                 show_layer_activations=False, show_trainable=False, splines="ortho",
                 **kwargs):
    """The model's layer graph as a `pydot.Dot` (a dashed `pydot.Cluster` with
    `subgraph=True`). Arguments as `plot_model`; `rankdir="LR"` draws left
    to right, `splines` how edges bend ("ortho", "curved", "polyline", ...).

    Args:
        model: A built model.
        show_shapes: Add each layer's input/output shapes (default False).
        show_dtype: Add each layer's output dtype (default False).
        show_layer_names: Put the layer names in the boxes (default True).
        rankdir: "TB" (top to bottom, the default) or "LR" (left to right).
        expand_nested: Draw nested models' layers inside dashed clusters.
        dpi: The resolution of raster images (default 200).
        subgraph: Return a dashed `pydot.Cluster` (for nesting) instead of a graph.
        show_layer_activations: Add the activation of layers that have one.
        show_trainable: Mark layers with weights trainable or not.
        splines: How edges bend (default "ortho").
        **kwargs: Only `layer_range=None` (Keras's removed option) is accepted.

    Returns:
        A `pydot.Dot` (or `pydot.Cluster`).

    Raises:
        ImportError: pydot is not installed.
        ValueError: the model is not built, or an unknown keyword argument.
    """
    _check_built(model)
    pydot = _pydot()
    if pydot is None:
        raise ImportError(_NO_PYDOT.format("model_to_dot") + _EXTRA)
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError("Argument `layer_range` is no longer supported.")
    if kwargs:
        raise ValueError(f"model_to_dot() got unrecognized keyword arguments: {sorted(kwargs)}.")
    if subgraph:
        dot = pydot.Cluster(style="dashed", graph_name=model.name)
        dot.set("label", model.name)
        dot.set("labeljust", "l")
    else:
        dot = pydot.Dot()
        for key, value in (("rankdir", rankdir), ("concentrate", True), ("dpi", dpi),
                           ("splines", splines)):
            dot.set(key, value)
        dot.set_node_defaults(shape="record")
    options = dict(show_shapes=show_shapes, show_dtype=show_dtype,
                   show_layer_names=show_layer_names,
                   show_layer_activations=show_layer_activations,
                   show_trainable=show_trainable)
    if not _is_graph_model(model):       # subclassed: its graph is Python code
        dot.add_node(_box(pydot, model, options))
        return dot

    for layer in model.layers:
        if expand_nested and _is_graph_model(layer):
            dot.add_subgraph(model_to_dot(
                layer, show_shapes, show_dtype, show_layer_names, rankdir, expand_nested,
                subgraph=True, show_layer_activations=show_layer_activations,
                show_trainable=show_trainable))
        else:
            dot.add_node(_box(pydot, layer, options))
    for source, out_index, destination, in_index in _edges(model):
        if expand_nested:
            source = _exit_layer(source, out_index)
            destination = _entry_layer(destination, in_index)
        _connect(dot, pydot, source, destination)
    return dot


@export("loopax.utils.plot_model")
def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=False, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, splines="ortho",
               **kwargs):
    """Draws the model's layer graph into `to_file` (the format from its
    extension: png, svg, pdf, ...; png without one).

    Needs pydot and Graphviz (in a notebook a missing one prints the message and
    returns None instead of raising, as Keras does).

    Args:
        model: A built model.
        to_file: The image file to write (default "model.png").
        show_shapes: Add each layer's input/output shapes (default False).
        show_dtype: Add each layer's output dtype (default False).
        show_layer_names: Put the layer names in the boxes (else the class only;
            default False).
        rankdir: "TB" (top to bottom, the default) or "LR" (left to right).
        expand_nested: Draw nested models' layers inside dashed clusters.
        dpi: The resolution of raster images (default 200).
        show_layer_activations: Add the activation of layers that have one.
        show_trainable: Mark layers with weights trainable or not.
        splines: How edges bend: "ortho" (the default), "curved", "polyline", ...
        **kwargs: Only `layer_range=None` (Keras's removed option) is accepted.

    Returns:
        An `IPython.display.Image` of the file when IPython is installed (shown inline
        in notebooks), else None (always None for a PDF).

    Raises:
        ImportError: pydot or Graphviz is missing (outside a notebook).
        ValueError: the model is not built, or an unknown keyword argument.
    """
    _check_built(model)
    pydot = _pydot()
    problem = None
    if pydot is None:
        problem = _NO_PYDOT.format("`plot_model`") + _EXTRA
    elif not _graphviz_works(pydot):
        problem = _NO_GRAPHVIZ
    if problem is not None:
        if _in_notebook():
            print(problem)
            return None
        raise ImportError(problem)
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                       show_layer_names=show_layer_names, rankdir=rankdir,
                       expand_nested=expand_nested, dpi=dpi,
                       show_layer_activations=show_layer_activations,
                       show_trainable=show_trainable, splines=splines, **kwargs)
    to_file = os.fspath(to_file)
    extension = os.path.splitext(to_file)[1][1:] or "png"
    dot.write(to_file, format=extension)
    if extension == "pdf":
        return None
    try:
        from IPython import display
    except ImportError:
        return None
    return display.Image(filename=to_file)
