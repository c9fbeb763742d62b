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
