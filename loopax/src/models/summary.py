"""`model.summary()`: the Keras table of layers, output shapes and parameters.

    Model: "functional"
    ┏━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┓
    ┃ Layer (type)              ┃ Output Shape        ┃    Param # ┃
    ┡━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━┩
    │ digits (InputLayer)       │ (None, 784)         │          0 │
    ├───────────────────────────┼─────────────────────┼────────────┤
    │ dense (Dense)             │ (None, 64)          │     50,240 │
    └───────────────────────────┴─────────────────────┴────────────┘
     Total params: 50,240 (196.25 KB)
     Trainable params: 50,240 (196.25 KB)
     Non-trainable params: 0 (0.00 B)

A "Connected to" column appears when the graph is not a simple chain.
`layer_range=("first", "last")` shows the layers from the first whose name
matches the regex `first` to the last matching `last`; `expand_nested=True`
shows each nested model's layers under it (Keras's rules for both).
"""

from __future__ import annotations

import re

import jax
import numpy as np

from loopax.src.layers.input_layer import InputLayer
from loopax.src.layers.symbolic import is_symbolic


def readable_size(n_bytes: float) -> str:
    """1536 -> '1.50 KB' (powers of 1024, two decimals)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n_bytes < 1024 or unit == "TB":
            return f"{n_bytes:.2f} {unit}"
        n_bytes /= 1024


def _bytes(variables) -> int:
    return int(sum(v.size * np.dtype(v.dtype).itemsize for v in variables))


def _format_shape(tree) -> str:
    return _format_shapes(jax.tree_util.tree_map(lambda t: t.shape, tree, is_leaf=is_symbolic))


def _format_shapes(tree) -> str:
    shapes = jax.tree_util.tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple))
    text = [("(" + ", ".join(str(d) for d in s) + ("," if len(s) == 1 else "") + ")")
            for s in shapes]
    return text[0] if len(text) == 1 else "[" + ", ".join(text) + "]"


def _rows(model):
    """[(layer, name (type), output shape, params, connected-to)] and whether
    the graph is a chain."""
    # A Sequential's wired graph (None before it has one); any other model is its own.
    graph = vars(model)["_graph"] if "_graph" in vars(model) else model
    nodes = list(getattr(graph, "_nodes", None) or [])
    if not hasattr(graph, "_layers") or not hasattr(graph, "_nodes"):
        # Subclassed (or an empty Sequential): the direct sub-layers.
        return [(l, f"{l.name} ({type(l).__name__})", _built_output_shape(l), _param_count(l), "")
                for l in model.layers], True
    shown = set(id(l) for l in model.layers)
    node_of = {}
    counts = {}
    for node in [t.node for t in graph.inputs] + nodes:
        if id(node) not in node_of:
            k = counts.get(id(node.layer), 0)
            counts[id(node.layer)] = k + 1
            node_of[id(node)] = k
    layer_nodes = {}
    for node in [t.node for t in graph.inputs] + nodes:
        layer_nodes.setdefault(id(node.layer), [])
        if node not in layer_nodes[id(node.layer)]:
            layer_nodes[id(node.layer)].append(node)
    chain = len(graph.inputs) == 1 and len(graph.outputs) == 1 and all(
        len(n.input_tensors) == 1 and counts[id(n.layer)] == 1 for n in nodes)
    rows = []
    for layer in graph._layers:
        if id(layer) not in shown:
            continue
        layer_calls = layer_nodes.get(id(layer), [])
        shape = (_format_shape(layer_calls[0].outputs) if len(layer_calls) == 1
                 else "multiple" if layer_calls else "?")
        sources = [f"{t.node.layer.name}[{node_of[id(t.node)]}][{t.index}]"
                   for n in layer_calls if not isinstance(n.layer, InputLayer)
                   for t in n.input_tensors]
        rows.append((layer, f"{layer.name} ({type(layer).__name__})", shape,
                     _param_count(layer), ", ".join(sources) if sources else "-"))
    return rows, chain


def _built_output_shape(layer) -> str:
    """A layer outside a graph: its output shape for the shape it was built with
    (as Keras), "?" when it has none."""
    build_shape = layer.__dict__.get("_build_input_shape")
    if not layer.built or build_shape is None:
        return "?"
    try:
        return _format_shapes(layer.compute_output_shape(build_shape))
    except Exception:   # a layer whose output shape needs more than the input shape
        return "?"


def _param_count(layer) -> str:
    """The "Param #" cell: "0 (unbuilt)" for a layer not built yet, as Keras."""
    return f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"


def _layer_index_bounds(layers, layer_range):
    """[start, stop) of the rows `layer_range` (two name regexes) selects."""
    if layer_range is None:
        return 0, len(layers)
    if len(layer_range) != 2 or not all(isinstance(p, str) for p in layer_range):
        raise ValueError("summary(layer_range=...) takes two layer names (regular "
                         f"expressions), the first and the last to show; got {layer_range!r}.")
    lower = [i for i, l in enumerate(layers) if re.match(layer_range[0], l.name)]
    upper = [i for i, l in enumerate(layers) if re.match(layer_range[1], l.name)]
    if not lower or not upper:
        raise ValueError(f"summary(layer_range={list(layer_range)}): no layer name matches "
                         f"{layer_range[0 if not lower else 1]!r}. The layers are "
                         f"{[l.name for l in layers]}.")
    if min(lower) > max(upper):
        return min(upper), max(lower) + 1
    return min(lower), max(upper) + 1


def _trainable_mark(layer) -> str:
    """The "Trainable" column: Y or N for a layer with weights, - without."""
    if not getattr(layer, "weights", None):
        return "-"
    return "Y" if layer.trainable else "N"


def _nested_rows(layer, level):
    """The rows of a nested model's layers, indented under it (recursively)."""
    if not getattr(layer, "layers", None) or not getattr(layer, "built", False):
        return []
    rows = []
    for sub, name, shape, params, _ in _rows(layer)[0]:
        rows.append((f"{'   ' * level}└ {name}", shape, params, "-", _trainable_mark(sub)))
        rows += _nested_rows(sub, level + 1)
    return rows


def _wrap(text: str, width: int) -> list[str]:
    return [text[i:i + width] for i in range(0, max(len(text), 1), width)] or [""]


def print_summary(model, line_length=None, positions=None, print_fn=None,
                  expand_nested=False, show_trainable=False, layer_range=None):
    # A model not built yet (a Sequential without an Input) prints as in Keras: its
    # layers with "?" shapes and "0 (unbuilt)" parameters.
    print_fn = print_fn or print
    layer_rows, chain = _rows(model)
    start, stop = _layer_index_bounds([r[0] for r in layer_rows], layer_range)
    rows = []
    for layer, *cells in layer_rows[start:stop]:
        rows.append((*cells, _trainable_mark(layer)))
        if expand_nested:
            rows += _nested_rows(layer, 1)
    headers = ["Layer (type)", "Output Shape", "Param #"]
    if not chain:
        headers.append("Connected to")
    line_length = line_length or (88 if chain else 108)
    positions = positions or ([0.45, 0.84, 1.0] if chain else [0.3, 0.6, 0.7, 1.0])
    if show_trainable:   # Keras's layout: a narrow last column
        headers.append("Trainable")
        line_length += 12
        positions = [p * 0.9 for p in positions] + [1.0]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    widths = [b - a - 3 for a, b in zip([0] + positions[:-1], positions)]
    widths[0] += 1

    def border(left, fill, mid, right):
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def row(cells, bar, align_right=(2,)):
        wrapped = [_wrap(c, w) for c, w in zip(cells, widths)]
        lines = []
        for i in range(max(len(w) for w in wrapped)):
            parts = []
            for j, (w, width) in enumerate(zip(wrapped, widths)):
                text = w[i] if i < len(w) else ""
                parts.append(text.rjust(width) if j in align_right else text.ljust(width))
            lines.append(bar + bar.join(f" {p} " for p in parts) + bar)
        return lines

    lines = [f'Model: "{model.name}"', border("┏", "━", "┳", "┓")]
    lines += row(headers, "┃")
    lines.append(border("┡", "━", "╇", "┩"))
    for i, (name, shape, params, connected, trainable) in enumerate(rows):
        cells = ([name, shape, params] + ([] if chain else [connected])
                 + ([trainable] if show_trainable else []))
        if i:
            lines.append(border("├", "─", "┼", "┤"))
        lines += row(cells, "│")
    lines.append(border("└", "─", "┴", "┘"))
    total = model.weights
    trainable = model.trainable_weights
    non_trainable = model.non_trainable_weights
    count = lambda vs: int(sum(v.size for v in vs))
    lines += [
        f" Total params: {count(total):,} ({readable_size(_bytes(total))})",
        f" Trainable params: {count(trainable):,} ({readable_size(_bytes(trainable))})",
        f" Non-trainable params: {count(non_trainable):,} "
        f"({readable_size(_bytes(non_trainable))})",
    ]
    optimizer = getattr(model, "optimizer", None)
    opt_vars = getattr(optimizer, "variables", None) if optimizer is not None else None
    if opt_vars:
        lines.append(f" Optimizer params: {count(opt_vars):,} "
                     f"({readable_size(_bytes(opt_vars))})")
    for line in lines:
        print_fn(line)
