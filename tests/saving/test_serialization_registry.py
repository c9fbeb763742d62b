"""The registry that configs resolve class names through."""



import pytest

from loopax.layers import Dense, Layer
from loopax.saving import (
    custom_object_scope,
    deserialize,
    get_registered_name,
    get_registered_object,
    register_serializable,
    serialize,
)


@register_serializable(package="regtest", name="Doubler")
class Doubler(Layer):
    def call(self, x):
        return 2 * x


def test_builtin_round_trip():
    entry = serialize(Dense(3, name="d"))
    assert entry["class_name"] == "Dense" and entry["config"]["name"] == "d"
    clone = deserialize(entry)
    assert type(clone) is Dense and clone.get_config() == entry["config"]


def test_registered_names_and_lookup_order():
    assert get_registered_name(Doubler) == "regtest>Doubler"
    entry = serialize(Doubler(name="x2"))
    assert entry["registered_name"] == "regtest>Doubler"
    assert type(deserialize(entry)) is Doubler

    class Other(Layer):
        pass

    # custom_objects (and scopes) win over the registry.
    assert type(deserialize(entry, custom_objects={"regtest>Doubler": Other})) is Other
    with custom_object_scope({"Thing": Other}):
        assert get_registered_object("Thing") is Other
    assert get_registered_object("Thing") is None


def test_unknown_names_and_registration_errors():
    with pytest.raises(ValueError, match=r"Unknown class or function 'Nope'.*regtest>Doubler"):
        deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(TypeError, match="get_config"):
        register_serializable()(type("NoConfig", (), {}))
    with pytest.raises(ValueError, match="class_name"):
        deserialize({"config": {}})


# ---- loopax's own classes and functions, registered where they are defined ----

_PUBLIC_PACKAGES = ("layers", "models", "initializers", "regularizers", "constraints",
                    "activations", "losses", "metrics", "optimizers")
# Module helpers, not objects a config names: the old scan of the public packages
# resolved these too ("get" gave loopax.activations.get).
# `losses.Reduction` (tf.keras's names of reduction strings) is a namespace of
# constants, not an object a config names.
_HELPERS = {"get", "serialize", "deserialize", "get_accuracy_for", "reduce_weighted_values",
            "Reduction"}


def _public_names():
    """(package, name, object) for every public class, and every function of the
    packages whose functions configs name, in Keras's package order."""
    import inspect

    import loopax
    for package in _PUBLIC_PACKAGES:
        module = getattr(loopax, package)
        for name, obj in sorted(vars(module).items()):
            functions_named = package in ("activations", "losses", "metrics")
            if name.startswith("_") or name in _HELPERS:
                continue
            if inspect.isclass(obj) or (functions_named and inspect.isfunction(obj)):
                yield package, name, obj


def test_every_public_class_and_function_resolves_by_its_public_name():
    first_owner = {}
    for package, name, obj in _public_names():
        first_owner.setdefault(name, (package, obj))   # "Hinge": the loss, as Keras
    # A config names a function as {"class_name": "function", "config": name} (a bare
    # string is a value, as in Keras) and a class by its "class_name".
    wrong = {name: package for name, (package, obj) in first_owner.items()
             if deserialize({"class_name": "function", "config": name}) is not obj}
    assert not wrong and len(first_owner) > 300


@pytest.mark.parametrize("name", ["sigmoid", "tanh", "silu", "selu", "softplus", "relu6",
                                  "hard_sigmoid", "log_sigmoid"])
def test_activation_functions_round_trip_through_a_config(name):
    import keras

    import loopax
    function = getattr(loopax.activations, name)
    entry = serialize(function)
    assert entry == {"class_name": "function", "config": name}
    assert deserialize(entry) is function
    # Keras round-trips the same activation by the same name.
    keras_function = getattr(keras.activations, name)
    assert keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(keras_function)) is keras_function


@pytest.mark.parametrize("helper", sorted(_HELPERS))
def test_a_module_helper_is_not_a_class_a_config_can_name(helper):
    with pytest.raises(ValueError, match=f"Unknown class or function '{helper}'"):
        deserialize({"class_name": helper, "config": {}})


def test_a_user_layer_subclass_is_not_registered_by_defining_it():
    class Tripler(Layer):
        def call(self, x):
            return 3 * x

    with pytest.raises(ValueError, match="Unknown class or function 'Tripler'"):
        deserialize({"class_name": "Tripler", "config": {}})
