"""`loopax.optimizers.legacy`, `loopax.legacy.saving` and `loopax.utils.legacy` do what
Keras 3's do: the legacy optimizers raise ImportError when created, and the Keras 2
serialization format round-trips objects (compared with Keras's own output)."""

import copy

import numpy as np
import pytest
from keras_reference import keras

import loopax


@pytest.mark.parametrize("name", ["Adagrad", "Adam", "Ftrl", "Optimizer", "RMSprop", "SGD"])
def test_legacy_optimizers_raise_import_error_as_keras(name):
    with pytest.raises(ImportError, match="not supported in Keras 3"):
        getattr(keras.optimizers.legacy, name)(learning_rate=0.1)
    with pytest.raises(ImportError, match=r"not supported in Keras 3.*loopax\.optimizers"):
        getattr(loopax.optimizers.legacy, name)(learning_rate=0.1)




@pytest.mark.parametrize("module", ["legacy.saving", "utils.legacy"])
def test_legacy_serialize_has_keras_2_format(module):
    def serialize(lib):
        mod = lib
        for part in module.split("."):
            mod = getattr(mod, part)
        layer = lib.layers.Dense(3, activation="relu", kernel_initializer="he_normal")
        return mod.serialize_keras_object(layer)
    ours, theirs = serialize(loopax), serialize(keras)
    assert set(ours) == set(theirs) == {"class_name", "config"}
    assert ours["class_name"] == theirs["class_name"] == "Dense"
    for key in ("units", "activation", "use_bias"):
        assert ours["config"][key] == theirs["config"][key]
    # Keras 3's get_config already gives nested objects as dicts: kept as they are.
    assert ours["config"]["kernel_initializer"]["class_name"] == \
        theirs["config"]["kernel_initializer"]["class_name"] == "HeNormal"
    assert loopax.legacy.saving.serialize_keras_object(loopax.activations.relu) == \
        keras.legacy.saving.serialize_keras_object(keras.activations.relu) == "relu"
    assert loopax.legacy.saving.serialize_keras_object(None) is None


def _holder_class(lib):
    class Holder:
        """An object whose config holds another object (a Keras 2 style config)."""

        def __init__(self, inner, scale):
            self.inner, self.scale = inner, scale

        def get_config(self):
            return {"inner": self.inner, "scale": self.scale}

        @classmethod
        def from_config(cls, config):
            return cls(**config)
    return Holder


def test_nested_objects_are_marked_passive_and_read_back_as_keras():
    seen = {}
    for lib in (keras, loopax):
        holder = _holder_class(lib)(lib.initializers.HeNormal(seed=4), 2.0)
        config = lib.legacy.saving.serialize_keras_object(holder)
        seen[lib.__name__] = copy.deepcopy(config)   # Keras's deserialize edits it in place
        again = lib.legacy.saving.deserialize_keras_object(
            config, custom_objects={"Holder": type(holder),
                                    "HeNormal": lib.initializers.HeNormal})
        assert isinstance(again.inner, lib.initializers.HeNormal)
        assert again.inner.seed == 4 and again.scale == 2.0
    ours, theirs = seen["loopax"]["config"]["inner"], seen["keras"]["config"]["inner"]
    assert ours["__passive_serialization__"] is theirs["__passive_serialization__"] is True
    assert ours["class_name"] == theirs["class_name"] == "HeNormal"
    assert ours["config"]["seed"] == theirs["config"]["seed"] == 4


def test_legacy_round_trip_rebuilds_the_same_layer():
    legacy = loopax.utils.legacy
    layer = loopax.layers.Dense(3, activation="relu", kernel_initializer="he_normal")
    modules = {"Dense": loopax.layers.Dense, "HeNormal": loopax.initializers.HeNormal}
    again = legacy.deserialize_keras_object(legacy.serialize_keras_object(layer),
                                            module_objects=modules)
    assert isinstance(again, loopax.layers.Dense)
    assert again.units == 3 and again.activation is loopax.activations.relu
    assert isinstance(again.kernel_initializer, loopax.initializers.HeNormal)
    x = np.ones((2, 4), "float32")
    assert again(x).shape == (2, 3)


def test_legacy_deserialize_names_and_errors_as_keras():
    def fn(x):
        return x

    class Thing:
        pass

    for lib in (keras, loopax):
        load = lib.legacy.saving.deserialize_keras_object
        # (Keras 3.15.1 fails with an AttributeError for a name outside custom_objects.)
        assert load("fn", custom_objects={"fn": fn}) is fn
        assert isinstance(load("Thing", custom_objects={"Thing": Thing}), Thing)
        assert load(fn) is fn and load(None) is None
        with pytest.raises(ValueError, match="Unknown layer: 'Nope'"):
            load({"class_name": "Nope", "config": {}}, printable_module_name="layer")
        with pytest.raises(ValueError, match="Improper config format"):
            load({"config": {}})
        with pytest.raises(ValueError, match="Could not interpret serialized"):
            load(3)
    assert loopax.legacy.saving.deserialize_keras_object("fn", module_objects={"fn": fn}) is fn
    with pytest.raises(ValueError, match="Unknown object: 'nope'"):
        loopax.legacy.saving.deserialize_keras_object("nope")


def test_keras_2_config_written_by_keras_loads_in_loopax():
    config = keras.legacy.saving.serialize_keras_object(keras.layers.Dropout(0.3, seed=2))
    layer = loopax.legacy.saving.deserialize_keras_object(
        config, module_objects={"Dropout": loopax.layers.Dropout})
    assert isinstance(layer, loopax.layers.Dropout)
    assert layer.rate == 0.3 and layer.seed == 2
