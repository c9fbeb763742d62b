"""plot_model / model_to_dot: rendering (skipped without Graphviz's `dot`),
Keras's ImportError wording without pydot or Graphviz, and argument errors."""

import shutil

import numpy as np
import pytest

import loopax
from loopax.src.models import plotting

pytest.importorskip("pydot", reason="pydot is not installed (pip install 'loopax[plot]')")


def small_model():
    inputs = loopax.Input((3,), name="features")
    hidden = loopax.layers.Dense(4, activation="relu", name="hidden")(inputs)
    return loopax.Model(inputs, loopax.layers.Dense(1, name="score")(hidden))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
@pytest.mark.parametrize("name, magic", [("m.png", b"\x89PNG"), ("m.svg", b"<?xml"),
                                         ("m", b"\x89PNG")])
def test_plot_model_renders_the_file_format_of_the_extension(tmp_path, name, magic):
    plotting_result = loopax.utils.plot_model(small_model(), to_file=tmp_path / name,
                                              show_shapes=True, show_layer_names=True)
    assert (tmp_path / name).read_bytes().startswith(magic)
    assert plotting_result is None or hasattr(plotting_result, "data")
    if name == "m.svg":
        svg = (tmp_path / name).read_text()
        assert "hidden" in svg and "(None, 4)" in svg and "score" in svg


def test_graph_of_a_functional_model():
    dot = loopax.utils.model_to_dot(small_model(), show_layer_names=True)
    ids = {node.get_name().strip('"'): node.get("label") for node in dot.get_nodes()
           if node.get("label")}
    edges = [(ids[e.get_source().strip('"')], ids[e.get_destination().strip('"')])
             for e in dot.get_edges()]
    assert len(ids) == 3 and len(edges) == 2
    assert "features" in edges[0][0] and "hidden" in edges[0][1]
    assert "hidden" in edges[1][0] and "score" in edges[1][1]


def test_subclassed_model_is_one_box():
    class Net(loopax.Model):
        def __init__(self):
            super().__init__()
            self.dense = loopax.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    model = Net()
    model(np.zeros((1, 3), np.float32))
    dot = loopax.utils.model_to_dot(model)
    assert len([n for n in dot.get_nodes() if n.get("label")]) == 1 and not dot.get_edges()


def test_missing_pydot_or_graphviz_raise_keras_import_errors(monkeypatch, tmp_path):
    model = small_model()
    monkeypatch.setattr(plotting, "_graphviz_works", lambda pydot: False)
    with pytest.raises(ImportError, match=r"You must install graphviz \(see instructions at "
                                          r"https://graphviz.gitlab.io/download/\) for "
                                          "`plot_model` to work."):
        loopax.utils.plot_model(model, to_file=tmp_path / "m.png")
    monkeypatch.setattr(plotting, "_pydot", lambda: None)
    with pytest.raises(ImportError, match=r"You must install pydot \(`pip install pydot`\) for "
                                          "`plot_model` to work"):
        loopax.utils.plot_model(model, to_file=tmp_path / "m.png")
    with pytest.raises(ImportError, match=r"You must install pydot \(`pip install pydot`\) for "
                                          "model_to_dot to work"):
        loopax.utils.model_to_dot(model)
    assert not (tmp_path / "m.png").exists()


def test_argument_errors():
    with pytest.raises(ValueError, match="not been built"):
        loopax.utils.model_to_dot(loopax.Sequential([loopax.layers.Dense(2)]))
    with pytest.raises(ValueError, match="unrecognized keyword"):
        loopax.utils.model_to_dot(small_model(), show_colours=True)
    with pytest.raises(ValueError, match="layer_range"):
        loopax.utils.model_to_dot(small_model(), layer_range=["a", "b"])
