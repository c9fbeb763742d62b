"""model_to_dot against Keras: the same boxes (their text) and the same edges,
for a functional model holding a nested functional and a Sequential model."""

import re

import pytest
from keras_reference import keras

import loopax

pytest.importorskip("pydot", reason="pydot is not installed (pip install 'loopax[plot]')")


def build(lib):
    a, b = lib.Input((4,), name="a"), lib.Input((2,), name="b")
    inner_in = lib.Input((3,), name="inner_in")
    inner = lib.Model(inner_in, lib.layers.Dense(2, name="inner_dense")(inner_in), name="inner")
    h = inner(lib.layers.Dense(3, activation="relu", name="d1")(a))
    joined = lib.layers.Concatenate(name="cat")([h, b])
    seq = lib.Sequential([lib.layers.Dense(2, activation="tanh", name="s1"),
                          lib.layers.Dense(1, name="s2")], name="seq")
    model = lib.Model([a, b], seq(joined), name="outer")
    model.get_layer("d1").trainable = False
    return model


def drawing(dot):
    """(sorted box texts, sorted edges as pairs of layer names, graph attributes)."""
    texts, edges = {}, set()

    def walk(graph):
        for node in graph.get_nodes():
            label = node.get("label")
            if label:
                texts[node.get_name().strip('"')] = re.sub(r"(<[^>]+>)+", "|", label).strip("|")
        for edge in graph.get_edges():
            edges.add((edge.get_source().strip('"'), edge.get_destination().strip('"')))
        for sub in graph.get_subgraphs():
            walk(sub)
    walk(dot)
    name = {key: text.split("|")[0] for key, text in texts.items()}
    attributes = {k: str(v) for k, v in dot.get_attributes().items()}
    return sorted(texts.values()), sorted((name[s], name[d]) for s, d in edges), attributes


@pytest.mark.parametrize("options", [
    {},
    {"show_shapes": True, "show_dtype": True, "show_layer_activations": True,
     "show_trainable": True, "rankdir": "LR", "dpi": 96},
    {"expand_nested": True, "show_shapes": True, "show_layer_names": False},
], ids=["plain", "everything", "expand_nested"])
def test_model_to_dot_draws_what_keras_draws(options):
    ours = drawing(loopax.utils.model_to_dot(build(loopax), **options))
    theirs = drawing(keras.utils.model_to_dot(build(keras), **options))
    assert ours == theirs
    assert len(ours[1]) >= 4


def test_sequential_and_subclassed_models_draw_as_keras():
    def sequential(lib):
        return lib.Sequential([lib.Input((3,)), lib.layers.Dense(2, name="x"),
                               lib.layers.Dense(1, name="y")])
    assert drawing(loopax.utils.model_to_dot(sequential(loopax), show_shapes=True)) == \
        drawing(keras.utils.model_to_dot(sequential(keras), show_shapes=True))
