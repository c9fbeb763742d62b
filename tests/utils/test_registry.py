import pytest

from loopax import constraints, initializers, losses, optimizers, saving
from loopax.src.optimizers import schedules
from loopax.src.utils.registry import Registry, name_table


class Shape:
    def __init__(self, size=1):
        self.size = size

    def __call__(self, x):
        return x * self.size

    def get_config(self):
        return {"size": self.size}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Square(Shape):
    pass


def double(x):
    return 2 * x


def make_registry(**kwargs):
    return Registry("shape", name_table([Square, double], {"sq": Square}), base=Shape, **kwargs)


def test_name_table_has_class_snake_function_and_alias_names():
    assert name_table([Square, double], {"sq": Square}) == {
        "Square": Square, "square": Square, "double": double, "sq": Square}


def test_get_follows_keras_rules():
    registry = make_registry()
    shape = Square(3)
    assert registry.get(None) is None
    assert registry.get(shape) is shape
    assert type(registry.get("sq")) is Square and registry.get("sq").size == 1
    assert type(registry.get(Square)) is Square
    assert registry.get("double") is double
    fn = lambda x: x
    assert registry.get(fn) is fn
    assert registry.get({"class_name": "square", "config": {"size": 4}}).size == 4
    with pytest.raises(ValueError, match="Could not interpret shape 3"):
        registry.get(3)
    with pytest.raises(ValueError, match="must subclass Shape"):
        registry.get(dict)


def test_unknown_name_lists_listed_names_and_close_matches():
    registry = make_registry(unlisted=["Square"], accepts="a Shape")
    with pytest.raises(ValueError) as e:
        registry.get("squar")
    assert str(e.value) == ("Unknown shape 'squar'. Did you mean 'square'? "
                            "Valid names: double, sq, square; or pass a Shape.")


def test_serialize_round_trips():
    registry = make_registry()
    config = registry.serialize(Square(5))
    assert config == {"class_name": "Square", "config": {"size": 5}}
    assert registry.deserialize(config).size == 5
    assert registry.serialize(double) == "double"
    assert registry.deserialize("double") is double
    other = lambda x: x
    assert registry.serialize(other) is other


def test_custom_objects_and_scopes_resolve_names():
    class Cube(Shape):
        pass

    registry = make_registry()
    config = {"class_name": "Cube", "config": {"size": 2}}
    with pytest.raises(ValueError, match="Unknown shape 'Cube'"):
        registry.deserialize(config)
    assert type(registry.deserialize(config, {"Cube": Cube})) is Cube
    with saving.custom_object_scope({"Cube": Cube}):
        assert type(registry.get("Cube")) is Cube


def test_ignore_case():
    registry = Registry("optimizer", {"Adam": Square}, ignore_case=True)
    assert type(registry.get("ADAM")) is Square
    with pytest.raises(ValueError, match="Valid names: adam;"):
        registry.get("sgd")


def test_modules_keep_their_messages():
    with pytest.raises(ValueError, match=r"Unknown constraint 'maxnorm'\. Did you mean "
                                         r"'max_norm'.*Valid names: max_norm, min_max_norm"):
        constraints.get("maxnorm")
    with pytest.raises(ValueError, match=r"Unknown optimizer 'adamm'.*Valid names: adadelta"):
        optimizers.get("adamm")
    with pytest.raises(ValueError, match="Unknown learning-rate schedule 'Nope'"):
        schedules.deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(ValueError, match="Cannot serialize loss"):
        losses.serialize(lambda y_true, y_pred: y_pred)


def test_registered_custom_initializer_round_trips_by_its_registered_name():
    @saving.register_serializable(package="registry_test")
    class Fill(initializers.Initializer):
        def __init__(self, value=0.0):
            self.value = value

        def get_config(self):
            return {"value": self.value}

    try:
        config = initializers.serialize(Fill(2.5))
        assert config["registered_name"] == "registry_test>Fill"
        clone = initializers.deserialize(config)
        assert type(clone) is Fill and clone.value == 2.5
    finally:
        saving.get_custom_objects().pop("registry_test>Fill")
