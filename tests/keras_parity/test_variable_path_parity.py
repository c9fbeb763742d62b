"""Variable paths equal to Keras 3.15.1's: each structure is built by the same code with
Keras and with loopax, and `[v.path for v in model.variables]` (and the layers' paths) must
be the same lists. Keras runs a layer's call, build and `add_weight` in the layer's name
scope, so a nested layer's variables carry its parents' names (`sequential/d3/kernel`)."""

import numpy as np
import pytest
from keras_reference import keras as real_keras

import loopax

X4 = np.linspace(-1.0, 1.0, 8, dtype="float32").reshape(2, 4)


def custom_layers(keras):
    """Custom layers and a subclassed model, defined against `keras` (either library)."""
    layers = keras.layers

    class Block(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.first = layers.Dense(3, name="a")
            self.second = layers.Dense(2, name="b")

        def call(self, x):
            return self.second(self.first(x))

    class FeedForward(layers.Layer):   # a Sequential without Input inside a layer
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.ff = keras.Sequential([layers.Dense(3, name="f1"), layers.Dense(4, name="f2")],
                                       name="ff")

        def call(self, x):
            return self.ff(x)

    class BuildsInBuild(layers.Layer):   # creates and builds a sub-layer in its build
        def build(self, shape):
            self.made = layers.Dense(2, name="made")
            self.made.build(shape)
            self.w = self.add_weight(shape=(2,), name="w")

        def call(self, x):
            return self.made(x) + self.w

    class Sub(keras.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.d1 = layers.Dense(3, name="d1")
            self.blk = Block(name="blk")

        def call(self, x):
            return self.blk(self.d1(x))

    return Block, FeedForward, BuildsInBuild, Sub


def sequential_with_input(keras):
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="d1"),
                             keras.layers.Dense(2, name="d2")])


def sequential_built_by_call(keras):
    model = keras.Sequential([keras.layers.Dense(3, name="d1"), keras.layers.Dense(2, name="d2")])
    model(X4)
    return model


def sequential_built_by_build(keras):
    model = keras.Sequential([keras.layers.Dense(3, name="d1"), keras.layers.Dense(2, name="d2")])
    model.build((None, 4))
    return model


def nested_sequential(keras):
    inner = keras.Sequential([keras.layers.Dense(3, name="d3")], name="inner")
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(5, name="d1"), inner],
                            name="outer")


def nested_sequential_by_call(keras):
    inner = keras.Sequential([keras.layers.Dense(3, name="a"), keras.layers.Dense(3, name="b")],
                             name="inner")
    outer = keras.Sequential([inner, keras.layers.Dense(2, name="c")], name="outer")
    outer(X4)
    return outer


def functional(keras):
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, name="d1")(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, name="d2")(hidden))


def functional_with_custom_layer(keras):
    block = custom_layers(keras)[0]
    inputs = keras.Input((4,))
    return keras.Model(inputs, block(name="blk")(inputs), name="fm")


def functional_with_sequential_in_layer(keras):
    feed_forward = custom_layers(keras)[1]
    inputs = keras.Input((4,))
    return keras.Model(inputs, feed_forward(name="bs")(inputs))


def functional_with_sequential(keras):
    inputs = keras.Input((4,))
    inner = keras.Sequential([keras.layers.Dense(3, name="d3")], name="inner")
    return keras.Model(inputs, keras.layers.Dense(2, name="d4")(inner(inputs)))


def functional_in_functional(keras):
    inputs = keras.Input((4,))
    inner = keras.Model(inputs, keras.layers.Dense(3, name="d1")(inputs), name="innerf")
    outer_inputs = keras.Input((4,))
    return keras.Model(outer_inputs, keras.layers.Dense(2, name="d2")(inner(outer_inputs)))


def subclassed_model(keras):
    model = custom_layers(keras)[3](name="sub")
    model(X4)
    return model


def custom_layer_alone(keras):
    layer = custom_layers(keras)[0](name="blk")
    layer(X4)
    return layer


def layer_built_in_build(keras):
    model = keras.Sequential([custom_layers(keras)[2](name="bib")])
    model(X4)
    return model


def layer_reused_twice(keras):
    shared = keras.layers.Dense(4, name="shared")
    inputs = keras.Input((4,))
    return keras.Model(inputs, shared(shared(inputs)))


def layer_in_two_sequentials(keras):
    shared = keras.layers.Dense(3, name="shared")
    keras.Sequential([keras.Input((3,)), shared], name="first")
    return keras.Sequential([keras.Input((3,)), shared], name="second")


def wrappers_and_rnn(keras):
    layers = keras.layers
    return keras.Sequential([keras.Input((5, 4)),
                             layers.TimeDistributed(layers.Dense(3, name="td_d"), name="td"),
                             layers.Bidirectional(layers.GRU(2, name="g"), name="bi")],
                            name="s")


def embedding_lstm(keras):
    model = keras.Sequential([keras.layers.Embedding(10, 4, name="emb"),
                              keras.layers.LSTM(3, name="lstm")])
    model(np.ones((2, 5), "int32"))
    return model


def attention(keras):
    inputs = keras.Input((5, 4))
    return keras.Model(inputs, keras.layers.MultiHeadAttention(2, 3, name="mha")(inputs, inputs))


def cnn_with_dropout(keras):
    layers = keras.layers
    model = keras.Sequential([layers.Conv2D(2, 3, name="c"), layers.BatchNormalization(name="bn"),
                              layers.GlobalAveragePooling2D(name="gap"),
                              layers.Dropout(0.2, name="dr"),
                              layers.Dense(2, name="d")], name="cnn")
    model(np.ones((1, 6, 6, 1), "float32"))
    return model


STRUCTURES = [sequential_with_input, sequential_built_by_call, sequential_built_by_build,
              nested_sequential, nested_sequential_by_call, functional,
              functional_with_custom_layer, functional_with_sequential_in_layer,
              functional_with_sequential, functional_in_functional, subclassed_model,
              custom_layer_alone, layer_built_in_build, layer_reused_twice,
              layer_in_two_sequentials, wrappers_and_rnn, embedding_lstm, attention,
              cnn_with_dropout]


def paths(library, build):
    library.utils.clear_session()
    model = build(library)
    layers = model.layers if isinstance(model, library.Model) else []
    layer_paths = [layer.path for layer in layers]
    return [v.path for v in model.variables], layer_paths


@pytest.mark.parametrize("build", STRUCTURES, ids=lambda f: f.__name__)
def test_variable_paths_are_keras(build):
    ours, our_layers = paths(loopax, build)
    theirs, their_layers = paths(real_keras, build)
    assert ours == theirs
    assert our_layers == their_layers


def test_optimizer_slot_paths_are_keras():
    """Slots are named after their variable's path (`adam/sq_d1_kernel_momentum`), as Keras
    names them (the order of `optimizer.variables` is loopax's own, all momenta first)."""
    def slots(library):
        library.utils.clear_session()
        model = library.Sequential([library.layers.Dense(3, name="d1")], name="sq")
        model.compile(optimizer="adam", loss="mse")
        model.fit(X4, np.ones((2, 3), "float32"), verbose=0)
        return sorted(v.path for v in model.optimizer.variables)
    assert slots(loopax) == slots(real_keras)


# ---- layers with nothing to build: Keras builds them on their first call, which gives
# them a path (`flatten`, `sequential/flatten`); those it builds at creation have None.

def functional_without_weights(keras):
    layers = keras.layers
    inputs = keras.Input((2, 4))
    flat = layers.Flatten()(inputs)
    doubled = layers.Lambda(lambda t: t * 2.0)(flat)
    added = layers.Add()([flat, doubled])
    joined = layers.Concatenate()([added, layers.Dropout(0.1)(flat)])
    repeated = layers.RepeatVector(2)(layers.Activation("relu")(joined))
    return keras.Model(inputs, layers.Dense(2, name="head")(layers.Flatten()(repeated)))


def sequential_without_weights(keras):
    layers = keras.layers
    return keras.Sequential([keras.Input((6, 6, 3)), layers.Rescaling(1 / 255.0),
                             layers.ZeroPadding2D(1), layers.Cropping2D(1),
                             layers.UpSampling2D(2), layers.Resizing(4, 4),
                             layers.Flatten(), layers.Dense(2, name="out")], name="prep")


def nested_with_flatten(keras):
    layers = keras.layers
    inner = keras.Sequential([layers.Flatten(), layers.Dense(3, name="d3")], name="inner")
    inputs = keras.Input((2, 2))
    return keras.Model(inputs, layers.Permute((1,))(inner(inputs)), name="outer")


@pytest.mark.parametrize("build", [functional_without_weights, sequential_without_weights,
                                   nested_with_flatten], ids=lambda f: f.__name__)
def test_paths_of_layers_without_weights_are_keras(build):
    ours, our_layers = paths(loopax, build)
    theirs, their_layers = paths(real_keras, build)
    assert our_layers == their_layers
    assert ours == theirs


def test_flatten_called_alone_has_keras_path():
    def flatten_path(library):
        library.utils.clear_session()
        layer = library.layers.Flatten()
        before = layer.path
        layer(np.ones((2, 2, 2), "float32"))
        return before, layer.path
    assert flatten_path(loopax) == flatten_path(real_keras) == (None, "flatten")


LAYER_ARGS = {"Lambda": (lambda t: t,), "Permute": ((1,),), "RepeatVector": (2,),
              "Rescaling": (1.0,), "CategoryEncoding": (3,), "CenterCrop": (2, 2),
              "Resizing": (2, 2), "RandomCrop": (2, 2)}


def test_layers_given_a_path_on_first_call_are_those_keras_builds_then():
    """loopax's list of the layers that get a path on their first call, though built at
    creation, against Keras: each is unbuilt in Keras when made, built in loopax."""
    from loopax.src.layers.layer import _KERAS_BUILDS_ON_FIRST_CALL
    for name in sorted(_KERAS_BUILDS_ON_FIRST_CALL):
        args = LAYER_ARGS.get(name, ())
        assert not getattr(real_keras.layers, name)(*args).built, name
        assert getattr(loopax.layers, name)(*args).built, name
