"""Functional models: graph order, several/dict inputs and outputs, shared layers,
nested models, input checks and config round trips, against NumPy forwards."""

import json

import jax
import numpy as np
import pytest

import loopax
from loopax.layers import Add, Concatenate, Dense, Dropout
from loopax.models import Functional, Model


def dense_np(layer, x):
    return x @ layer.kernel.numpy() + layer.bias.numpy()


def relu(x):
    return np.maximum(x, 0)


def two_in_two_out():
    a = loopax.Input(shape=(3,), name="a")
    b = loopax.Input(shape=(2,), name="b")
    ha = Dense(4, activation="relu", name="ha")(a)
    h = Concatenate(name="cat")([ha, b])
    y1 = Dense(1, name="y1")(h)
    y2 = Dense(2, name="y2")(h)
    return a, b, y1, y2


def reference(model, xa, xb):
    ha = relu(dense_np(model.get_layer("ha"), xa))
    h = np.concatenate([ha, xb], axis=-1)
    return dense_np(model.get_layer("y1"), h), dense_np(model.get_layer("y2"), h)


RNG = np.random.default_rng(0)
XA = RNG.normal(size=(5, 3)).astype(np.float32)
XB = RNG.normal(size=(5, 2)).astype(np.float32)


def test_plain_model_call_builds_a_functional():
    x = loopax.Input(shape=(3,))
    model = Model(inputs=x, outputs=Dense(2)(x))
    assert type(model) is Functional and isinstance(model, Model)
    listed = Model([x], [model.outputs[0]])
    assert listed(XA).shape == (5, 2)   # a one-element output list is unpacked, as in Keras


def test_multi_input_multi_output_matches_numpy():
    a, b, y1, y2 = two_in_two_out()
    model = Model([a, b], [y1, y2])
    out1, out2 = model([XA, XB])
    ref1, ref2 = reference(model, XA, XB)
    np.testing.assert_allclose(out1, ref1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out2, ref2, rtol=1e-5, atol=1e-6)
    assert [t.shape for t in model.outputs] == [(None, 1), (None, 2)]


def test_dict_data_keyed_by_input_names_and_unknown_keys_listed():
    a, b, y1, y2 = two_in_two_out()
    model = Model([a, b], [y1, y2])
    out1, _ = model({"b": XB, "a": XA})
    np.testing.assert_allclose(out1, reference(model, XA, XB)[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"unknown: \['c'\].*missing: \['b'\]") as e:
        model({"a": XA, "c": XB})
    assert "['a', 'b']" in str(e.value)


def test_dict_inputs_and_dict_outputs():
    a, b, y1, y2 = two_in_two_out()
    model = Model({"left": a, "right": b}, {"score": y1, "vec": y2})
    assert model.input_names == ["left", "right"]
    assert model.output_names == ["score", "vec"]
    out = model({"left": XA, "right": XB})
    assert sorted(out) == ["score", "vec"]
    ref1, ref2 = reference(model, XA, XB)
    np.testing.assert_allclose(out["vec"], ref2, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="left"):
        model({"a": XA, "b": XB})


def test_layers_in_graph_order_with_inputs_and_weights_in_layer_order():
    a, b, y1, y2 = two_in_two_out()
    model = Model([a, b], [y1, y2])
    # Keras order: by depth from the outputs (deepest first), ties by discovery.
    assert [l.name for l in model.layers] == ["a", "ha", "b", "cat", "y1", "y2"]
    assert [v.path for v in model.weights] == [
        "ha/kernel", "ha/bias", "y1/kernel", "y1/bias", "y2/kernel", "y2/bias"]
    assert model.get_layer(index=1).name == "ha"
    with pytest.raises(ValueError, match=r"No layer named 'nope'.*'cat'"):
        model.get_layer("nope")


def test_shared_layer_and_nested_model():
    inner_in = loopax.Input(shape=(4,))
    inner = Model(inner_in, Dense(3, name="inner_dense")(inner_in), name="inner")
    a = loopax.Input(shape=(4,), name="a")
    b = loopax.Input(shape=(4,), name="b")
    shared = Dense(4, name="shared")
    out = Add()([inner(shared(a)), inner(shared(b))])
    model = Model([a, b], out)
    assert [l.name for l in model.layers] == ["a", "b", "shared", "inner", "add"]
    assert len(model.weights) == 4   # the shared layer's weights once
    xa, xb = XB[:, :1] * np.ones((1, 4), np.float32), XA[:, :1] * np.ones((1, 4), np.float32)
    d = inner.get_layer("inner_dense")
    ref = dense_np(d, dense_np(shared, xa)) + dense_np(d, dense_np(shared, xb))
    np.testing.assert_allclose(model([xa, xb]), ref, rtol=1e-5, atol=1e-5)


def test_jit_and_stateless_call_agree_with_eager():
    a, b, y1, y2 = two_in_two_out()
    model = Model([a, b], y2)   # y1's layer is not part of this graph
    assert [l.name for l in model.layers] == ["a", "ha", "b", "cat", "y2"]
    eager = model([XA, XB])
    jitted = jax.jit(lambda xs: model(xs))([XA, XB])
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    new = [np.asarray(v.value) * 2 for v in model.trainable_variables]
    out, _ = model.stateless_call(new, model.non_trainable_variables, [XA, XB])
    h = np.concatenate([relu(XA @ new[0] + new[1]), XB], -1)
    np.testing.assert_allclose(out, h @ new[2] + new[3], rtol=1e-5, atol=1e-5)


def test_training_flag_reaches_layers():
    x = loopax.Input(shape=(200,))
    model = Model(x, Dropout(0.5)(x))
    ones = np.ones((2, 200), np.float32)
    np.testing.assert_array_equal(model(ones), ones)
    dropped = np.asarray(model(ones, training=True))
    assert set(np.unique(dropped)) == {0.0, 2.0}


def test_inputs_are_cast_and_rank_adjusted():
    x = loopax.Input(shape=(1,))
    model = Model(x, Dense(1)(x))
    ints = np.arange(4)                       # int data, no trailing axis
    out = model(ints)
    ref = dense_np(model.layers[1], np.arange(4, dtype=np.float32)[:, None])
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_wrong_input_shape_names_the_input_and_both_shapes():
    x = loopax.Input(shape=(784,), name="digits")
    model = Model(x, Dense(2)(x))
    with pytest.raises(ValueError, match=r"'digits'.*\(None, 784\).*\(2, 28, 28\)"):
        model(np.zeros((2, 28, 28), np.float32))
    with pytest.raises(ValueError, match="batch dimension"):
        model(np.zeros((784,), np.float32))
    a, b, y1, _ = two_in_two_out()
    with pytest.raises(ValueError, match=r"takes 2 input"):
        Model([a, b], y1)(XA)


def test_bad_graphs_are_refused():
    x = loopax.Input(shape=(3,))
    h = Dense(2)(x)
    with pytest.raises(ValueError, match="loopax.Input"):
        Model(h, Dense(1)(h))
    other = loopax.Input(shape=(3,), name="other")
    with pytest.raises(ValueError, match="'other', which is not in `inputs`"):
        Model(x, Add()([Dense(3)(x), other]))
    with pytest.raises(TypeError, match="symbolic"):
        Model(x, np.zeros(3))
    y = Dense(2, name="twin")(Dense(2, name="twin")(x))
    with pytest.raises(ValueError, match=r"unique.*'twin'"):
        Model(x, y)


def test_config_round_trip_through_json():
    a, b, y1, y2 = two_in_two_out()
    model = Model({"a": a, "b": b}, [y1, y2], name="two")
    config = json.loads(json.dumps(model.get_config()))
    clone = Model.from_config(config)
    assert clone.name == "two" and [l.name for l in clone.layers] == [l.name for l in model.layers]
    clone.set_weights(model.get_weights())
    for got, want in zip(clone({"a": XA, "b": XB}), model({"a": XA, "b": XB})):
        np.testing.assert_allclose(got, want, rtol=1e-6)


class CustomModel(Model):
    """Seed 001/004: a Model subclass called with (inputs, outputs)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra = "set in __init__"

    def train_step(self, data):
        return "custom train_step"


def test_subclass_called_with_inputs_outputs_is_functional_and_keeps_overrides():
    x = loopax.Input(shape=(32,))
    model = CustomModel(x, Dense(1)(x))
    assert isinstance(model, CustomModel) and isinstance(model, Functional)
    assert type(model).__name__ == "CustomModel"
    assert model.train_step(None) == "custom train_step" and model.extra == "set in __init__"
    assert model(np.ones((2, 32))).shape == (2, 1)
    assert type(CustomModel(inputs=x, outputs=Dense(1)(x))) is type(model)


class BuildsItsOwnGraph(Model):
    """A subclass whose __init__ builds a graph and passes it to super()."""

    def __init__(self, **kwargs):
        inputs = loopax.Input(shape=(3,))
        super().__init__(inputs=inputs, outputs=Dense(2, name="head")(inputs), **kwargs)
        self.note = "after super"


class TwoArgs(Model):
    """Two positional constructor arguments that are not tensors."""

    def __init__(self, a, b, **kwargs):
        super().__init__(**kwargs)
        self.dense = Dense(a + b)

    def call(self, x):
        return self.dense(x)


def test_graph_built_inside_a_subclass_init_and_non_tensor_positional_args():
    model = BuildsItsOwnGraph(name="own")
    assert isinstance(model, BuildsItsOwnGraph) and isinstance(model, Functional)
    assert model.note == "after super" and model.name == "own"
    np.testing.assert_allclose(model(XA), dense_np(model.get_layer("head"), XA), rtol=1e-6)
    two = TwoArgs(1, 2)
    assert not isinstance(two, Functional) and two(XA).shape == (5, 3)
    with pytest.raises(TypeError, match="positional"):
        Model(3)


def _concat_model(lib, as_dict):
    a, b = lib.Input((2,), name="a"), lib.Input((1,), name="b")
    y = lib.layers.Dense(1, kernel_initializer="ones")(lib.layers.Concatenate()([a, b]))
    return lib.Model({"a": a, "b": b} if as_dict else [a, b], y)


@pytest.mark.parametrize("as_dict", [True, False], ids=["dict_inputs", "list_inputs"])
def test_a_dict_key_no_input_is_named_after_is_ignored_with_a_warning_as_keras(as_dict):
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    x = {"a": rng.normal(size=(8, 2)).astype("float32"),
         "b": rng.normal(size=(8, 1)).astype("float32"),
         "extra": rng.normal(size=(8, 5)).astype("float32")}   # a feature the model skips
    y = rng.normal(size=(8, 1)).astype("float32")
    k_model, l_model = _concat_model(keras, as_dict), _concat_model(loopax, as_dict)
    l_model.set_weights(k_model.get_weights())
    with pytest.warns(UserWarning, match=r"keys \['extra'\].*ignored"):
        got = np.asarray(l_model(x))
    np.testing.assert_allclose(got, np.asarray(k_model(x)), rtol=1e-6)
    for model in (k_model, l_model):
        model.compile(optimizer="sgd", loss="mse")
    k_loss = k_model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False).history["loss"]
    l_loss = l_model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False).history["loss"]
    np.testing.assert_allclose(l_loss, k_loss, rtol=1e-5)
    np.testing.assert_allclose(l_model.predict(x, verbose=0), k_model.predict(x, verbose=0),
                               rtol=1e-5)
