"""Subclassed models, weights lists, count_params and summary()."""

import os

import numpy as np
import pytest

import loopax
from loopax.layers import BatchNormalization, Dense
from loopax.models import Model, Sequential


class TwoLayer(Model):
    def __init__(self, hidden=5, **kwargs):
        super().__init__(**kwargs)
        self.hidden = Dense(hidden, activation="relu")
        self.out = Dense(2)

    def call(self, x, training=None):
        return self.out(self.hidden(x))


class Linear(Model):
    """Seed 003's MyModelKeras."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = loopax.Variable(5.0)
        self.b = loopax.Variable(0.0)

    def call(self, x):
        return self.w * x + self.b


X = np.random.default_rng(2).normal(size=(3, 7)).astype(np.float32)


def test_subclassed_builds_on_first_call_and_tracks_sublayers():
    model = TwoLayer()
    assert not model.built and model.weights == []
    out = model(X)
    h = np.maximum(X @ model.hidden.kernel.numpy() + model.hidden.bias.numpy(), 0)
    np.testing.assert_allclose(out, h @ model.out.kernel.numpy() + model.out.bias.numpy(),
                               rtol=1e-5, atol=1e-6)
    assert model.layers == [model.hidden, model.out]
    assert [v.shape for v in model.weights] == [(7, 5), (5,), (5, 2), (2,)]
    assert model.count_params() == 7 * 5 + 5 + 5 * 2 + 2


def test_build_with_a_shape_creates_weights():
    model = TwoLayer(hidden=4)
    model.build((None, 7))
    assert model.built and [v.shape for v in model.weights] == [(7, 4), (4,), (4, 2), (2,)]
    assert model.get_config() == {"name": model.name, "trainable": True,
                                  "dtype": "float32", "hidden": 4}
    with pytest.raises(ValueError, match="not built"):
        TwoLayer().count_params()


def test_seed_003_style_variables_model():
    model = Linear()
    assert float(model(3.0)) == 15.0
    assert [float(v) for v in model.variables] == [5.0, 0.0]


def test_get_weights_set_weights_order_and_every_mismatch_listed():
    model = TwoLayer()
    model(X)
    weights = model.get_weights()
    assert [w.shape for w in weights] == [v.shape for v in model.weights]
    model.set_weights([np.full_like(w, i) for i, w in enumerate(weights)])
    assert [float(v.numpy().ravel()[0]) for v in model.weights] == [0, 1, 2, 3]
    bad = [np.zeros((5, 7)), np.zeros(5), np.zeros((5, 3)), np.zeros(2)]
    with pytest.raises(ValueError) as e:
        model.set_weights(bad)
    message = str(e.value)
    assert "weight 0" in message and "(7, 5)" in message and "(5, 7)" in message
    assert "weight 2" in message and "(5, 3)" in message
    assert "weight 1" not in message
    with pytest.raises(ValueError, match="expected 4 arrays, got 3"):
        model.set_weights(weights[:3])


def summary_lines(model, **kwargs):
    lines = []
    model.summary(print_fn=lines.append, **kwargs)
    return lines


def test_summary_of_a_functional_model():
    inputs = loopax.Input(shape=(784,), name="digits")
    x = Dense(64, activation="relu")(inputs)
    x = BatchNormalization()(x)
    outputs = Dense(10, name="predictions")(x)
    lines = summary_lines(Model(inputs, outputs, name="mnist"))
    text = "\n".join(lines)
    assert lines[0] == 'Model: "mnist"'
    assert "Layer (type)" in text and "Output Shape" in text and "Param #" in text
    assert "Connected to" not in text      # a chain
    row = next(l for l in lines if "predictions (Dense)" in l)
    assert "(None, 10)" in row and "650" in row
    assert "digits (InputLayer)" in text and "50,240" in text
    # 784*64+64 + 4*64 + 64*10+10; BN's moving statistics are non-trainable.
    assert " Total params: 51,146 (199.79 KB)" in lines
    assert " Trainable params: 51,018 (199.29 KB)" in lines
    assert " Non-trainable params: 128 (512.00 B)" in lines


def test_summary_connected_to_column_and_a_sequential_built_by_a_call():
    a = loopax.Input(shape=(2,), name="a")
    b = loopax.Input(shape=(2,), name="b")
    model = Model([a, b], loopax.layers.Add(name="sum")([a, b]))
    text = "\n".join(summary_lines(model))
    assert "Connected to" in text and "a[0][0], b[0][0]" in text
    seq = Sequential([Dense(2)])
    seq(np.ones((1, 3)))
    lines = summary_lines(seq)
    assert not any("InputLayer" in l for l in lines) and " Total params: 8 (32.00 B)" in lines


def _first_cells(lines):
    """The first column of each table row ("name (Type)", with nesting prefix)."""
    cells = []
    for line in lines:
        for part in line.splitlines():
            if part.startswith("│") and "(" in part.split("│")[1]:
                cells.append(part.split("│")[1].strip())
    return cells


def _nested_pair(lib):
    inner = lib.Sequential([lib.layers.Dense(3, name="inner_a"),
                            lib.layers.Dense(3, name="inner_b")], name="inner")
    inner.layers[1].trainable = False
    model = lib.Sequential([lib.Input((4,), name="x"), lib.layers.Dense(3, name="first"),
                            inner, lib.layers.Dense(2, name="last")], name="outer")
    model(np.ones((1, 4), np.float32))
    return model


@pytest.mark.parametrize("kwargs", [
    dict(), dict(expand_nested=True), dict(layer_range=["inner", "last"]),
    dict(layer_range=["fir", "inner"], expand_nested=True), dict(show_trainable=True),
    dict(show_trainable=True, expand_nested=True),
], ids=["plain", "expand_nested", "layer_range", "range_and_nested", "show_trainable",
        "trainable_and_nested"])
def test_summary_options_show_the_rows_keras_shows(kwargs):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    keras = pytest.importorskip("keras")
    expected = []
    _nested_pair(keras).summary(print_fn=lambda text, **_: expected.append(text),
                                line_length=120, **kwargs)
    got = summary_lines(_nested_pair(loopax), line_length=120, **kwargs)
    assert _first_cells(got) == _first_cells(expected)
    if kwargs.get("show_trainable"):
        # Keras's rule (its table is cut at the terminal width, so written out):
        # Y/N for a layer with weights by its `trainable`, "-" for one without.
        marks = [l.split("│")[-2].strip() for l in got if l.startswith("│")]
        assert marks == (["Y", "Y", "Y", "N", "Y"] if kwargs.get("expand_nested")
                         else ["Y", "Y", "Y"])

def test_summary_layer_range_that_matches_nothing_names_the_layers():
    with pytest.raises(ValueError, match="no layer name matches 'nope'.*first"):
        _nested_pair(loopax).summary(layer_range=["nope", "last"])
