"""`optimizers.get`, configs, and the clear errors for bad input."""

import jax.numpy as jnp
import numpy as np
import pytest
from optimizer_checks import make_problem, make_variables

import loopax
from loopax import optimizers
from loopax.optimizers import schedules


@pytest.mark.parametrize("name,cls", [
    ("sgd", optimizers.SGD), ("adam", optimizers.Adam), ("AdamW", optimizers.AdamW),
    ("rmsprop", optimizers.RMSprop), ("adagrad", optimizers.Adagrad),
    ("adamax", optimizers.Adamax), ("nadam", optimizers.Nadam), ("lion", optimizers.Lion),
    ("adafactor", optimizers.Adafactor), ("adadelta", optimizers.Adadelta),
    ("lamb", optimizers.Lamb)])
def test_get_by_name(name, cls):
    assert type(optimizers.get(name)) is cls


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="adam.*sgd|Valid names"):
        optimizers.get("adamm")
    with pytest.raises(ValueError, match="Could not interpret"):
        optimizers.get(3)


def test_config_round_trip_keeps_hyperparameters_and_schedule():
    optimizer = optimizers.Adam(schedules.ExponentialDecay(0.1, 10, 0.5), beta_1=0.8,
                                amsgrad=True, clipnorm=2.0)
    restored = optimizers.deserialize(optimizers.serialize(optimizer))
    assert type(restored) is optimizers.Adam
    assert (restored.beta_1, restored.amsgrad, restored.clipnorm) == (0.8, True, 2.0)
    assert isinstance(restored._learning_rate, schedules.ExponentialDecay)
    assert optimizers.get({"class_name": "SGD", "config": {"momentum": 0.5}}).momentum == 0.5


def test_integer_variables_cannot_be_trained():
    counter = loopax.Variable(np.array([1, 2]), name="counter")
    with pytest.raises(TypeError, match="'counter'.*only float variables"):
        optimizers.Adam().apply_gradients([(jnp.ones(2), counter)])


def test_mismatched_gradients_are_clear_errors():
    init, grads = make_problem(steps=1)
    variables = make_variables(init)
    optimizer = optimizers.Adam()
    with pytest.raises(ValueError, match="1 gradients for 2 variables"):
        optimizer.apply(grads[0][:1], variables)
    with pytest.raises(ValueError, match="'bias'.*shape \\(3,\\).*\\(2,\\)"):
        optimizer.apply([grads[0][0], jnp.ones(3)], variables)
    with pytest.raises(ValueError, match="no gradients"):
        optimizer.apply([None, None], variables)
    with pytest.raises(ValueError, match="unknown variable 'other'"):
        optimizer.apply([jnp.ones(2)], [loopax.Variable(np.zeros(2, np.float32), name="other")])


def test_stateless_apply_checks_its_arguments():
    init, grads = make_problem(steps=1)
    optimizer = optimizers.Adam()
    with pytest.raises(ValueError, match="not built"):
        optimizer.stateless_apply([], grads[0], init)
    optimizer.build(make_variables(init))
    with pytest.raises(ValueError, match="`optimizer_variables` has 2 entries but 6"):
        optimizer.stateless_apply(optimizer.variables[:2], grads[0], init)
    with pytest.raises(ValueError, match="`trainable_variables\\[1\\]` has shape"):
        optimizer.stateless_apply(optimizer.variables, grads[0], [init[0], np.zeros(5)])


def test_unknown_argument_is_rejected():
    with pytest.raises(ValueError, match="unknown argument.*'lr'"):
        optimizers.Adam(lr=0.1)


def test_weights_round_trip_between_optimizers():
    init, grads = make_problem(steps=2)
    trained = optimizers.Adam(0.1)
    variables = make_variables(init)
    for g in grads:
        trained.apply_gradients(zip(g, variables))
    store = {}
    trained.save_own_variables(store)
    fresh = optimizers.Adam(0.1)
    fresh.build(make_variables(init))
    fresh.load_own_variables(store)
    for a, b in zip(fresh.get_weights(), trained.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="saved state has 6 variables but the optimizer has 2"):
        optimizers.Adam().load_own_variables(store)


def test_every_optimizer_class_registers_its_name_where_it_is_defined():
    # `get` / `deserialize` resolve names from the table each class fills with
    # `@register_optimizer`; the wrappers are there too, the base classes are not.
    from loopax.src.optimizers.registry import OPTIMIZERS

    wrappers = {"LossScaleOptimizer": optimizers.LossScaleOptimizer,
                "MultiOptimizer": optimizers.MultiOptimizer}
    assert OPTIMIZERS.objects == {**optimizers.ALL_OPTIMIZERS, **wrappers}


def test_a_new_optimizer_is_listed_in_all_optimizers_by_its_decorator_alone():
    # Adding an optimizer touches only its module: `@register_optimizer` fills the name
    # table and `ALL_OPTIMIZERS`; a wrapper of another optimizer stays out of the latter.
    from loopax.src import serialization
    from loopax.src.optimizers.registry import _BY_NAME, OPTIMIZERS, register_optimizer

    @register_optimizer
    class PlainStepForTest(optimizers.SGD):
        pass

    @register_optimizer(wrapper=True)
    class WrapperForTest(optimizers.SGD):
        pass

    try:
        assert optimizers.ALL_OPTIMIZERS["PlainStepForTest"] is PlainStepForTest
        assert "WrapperForTest" not in optimizers.ALL_OPTIMIZERS
        assert isinstance(OPTIMIZERS.get("plainstepfortest"), PlainStepForTest)
        assert isinstance(OPTIMIZERS.get("WrapperForTest"), WrapperForTest)
    finally:
        optimizers.ALL_OPTIMIZERS.pop("PlainStepForTest", None)
        for name in ("PlainStepForTest", "WrapperForTest"):
            _BY_NAME.pop(name, None)
            serialization._BUILTINS["optimizer"].pop(name, None)


def test_optimizer_modules_do_not_patch_classes_from_outside():
    # A class's behaviour is declared in its own body: no module-level
    # `SomeClass.attribute = ...` anywhere in loopax/src/optimizers.
    import ast
    from pathlib import Path

    import loopax.src.optimizers as package

    patches = []
    for path in Path(package.__file__).parent.glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            patches += [f"{path.name}:{node.lineno}" for t in targets
                        if isinstance(t, ast.Attribute)]
    assert patches == []


@pytest.mark.parametrize("inner", [
    "adam", {"class_name": "Adam", "config": {"learning_rate": 0.5}},
    {"class_name": "adam", "config": {"learning_rate": 0.5}}],
    ids=["bare-name", "config", "lowercase-class-name"])
def test_loss_scale_optimizer_recreates_its_inner_optimizer_from_a_name_or_config(inner):
    restored = optimizers.LossScaleOptimizer.from_config(
        {"inner_optimizer": inner, "initial_scale": 8.0})
    assert type(restored.inner_optimizer) is optimizers.Adam
    assert restored.initial_scale == 8.0
    expected_rate = 0.001 if inner == "adam" else 0.5
    assert float(restored.inner_optimizer.learning_rate.numpy()) == pytest.approx(expected_rate)
