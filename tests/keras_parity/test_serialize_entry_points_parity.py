"""`serialize` / `deserialize` of layers, losses, metrics, optimizers, activations,
initializers, regularizers and constraints, against Keras: every argument form
Keras's accept (an instance, a config dict, a name, None) loopax's accept too,
with an equivalent result."""

import numpy as np
import pytest
from keras_reference import keras

import loopax

MAKE = {
    "layers": (lambda lib: lib.layers.Dense(2, activation="relu", name="d"), "Dense"),
    "losses": (lambda lib: lib.losses.MeanSquaredError(), "mean_squared_error"),
    "metrics": (lambda lib: lib.metrics.MeanSquaredError(), "mse"),
    "optimizers": (lambda lib: lib.optimizers.SGD(0.1), "adam"),
    "activations": (lambda lib: lib.activations.relu, "relu"),
    "initializers": (lambda lib: lib.initializers.GlorotUniform(seed=1), "zeros"),
    "regularizers": (lambda lib: lib.regularizers.L2(0.1), "l2"),
    "constraints": (lambda lib: lib.constraints.MaxNorm(2.0), "non_neg"),
}


def forms(lib, module):
    """(label, call) pairs: each entry point with each argument form."""
    make, name = MAKE[module]
    mod = getattr(lib, module)
    return {
        "deserialize(instance)": lambda: mod.deserialize(make(lib)),
        "deserialize(own dict)": lambda: mod.deserialize(mod.serialize(make(lib))),
        "deserialize(keras dict)": lambda: mod.deserialize(
            getattr(keras, module).serialize(MAKE[module][0](keras))),
        "deserialize(name)": lambda: mod.deserialize(name),
        "deserialize(None)": lambda: mod.deserialize(None),
        "serialize(instance)": lambda: mod.serialize(make(lib)),
        "serialize(name)": lambda: mod.serialize(name),
        "serialize(dict)": lambda: mod.serialize({"class_name": "X", "config": {}}),
        "serialize(None)": lambda: mod.serialize(None),
    }


def summary(value):
    """What must agree: plain values themselves, a config's class name, an object's type."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value.get("class_name", value)
    if callable(value) and not hasattr(value, "get_config"):
        return getattr(value, "__name__", None)
    return type(value).__name__


@pytest.mark.parametrize("module", list(MAKE))
def test_every_form_keras_accepts_loopax_accepts_alike(module):
    compared = []
    theirs_forms, ours_forms = forms(keras, module), forms(loopax, module)
    for label, theirs_call in theirs_forms.items():
        try:
            theirs = theirs_call()
        except Exception:
            continue   # Keras refuses this form: nothing to match
        ours = ours_forms[label]()
        assert summary(ours) == summary(theirs), label
        compared.append(label)
    assert len(compared) >= 3, compared


def test_layers_deserialize_returns_a_layer_instance():
    """Keras 3.15.1 raises TypeError ("Could not parse config") here; loopax returns
    the instance, as its deserializers (and Keras's losses/metrics ones) do."""
    dense = loopax.layers.Dense(2)
    assert loopax.layers.deserialize(dense) is dense
    with pytest.raises(TypeError):
        keras.layers.deserialize(keras.layers.Dense(2))
    rebuilt = loopax.layers.deserialize(loopax.layers.serialize(dense))
    rebuilt.build((None, 3))
    assert np.shape(rebuilt.kernel) == (3, 2)
