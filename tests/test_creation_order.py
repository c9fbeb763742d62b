"""The ownership walk lists the Variables an object created first, in creation
order (`module.CREATED_VARIABLES`), then the other Variables its attributes
hold: a layer's weights and an optimizer's variables keep Keras's order
however a subclass stores them or orders its attributes."""



import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import optimizers

keras = pytest.importorskip("keras")


# ---- layers -------------------------------------------------------------------
def _creation_order_layer(base, storage):
    """A layer creating `first` then `second`, stored as `storage` says:
    "reversed_attributes" declares the attributes in `__init__` in the reverse
    order, "list" keeps them only in a list, in the reverse order."""

    class CreationOrder(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            if storage == "reversed_attributes":
                self.second = None
                self.first = None

        def build(self, input_shape):
            first = self.add_weight((input_shape[-1], 3), initializer="ones", name="first")
            second = self.add_weight((3,), initializer="zeros", name="second")
            if storage == "list":
                self.parts = [second, first]
            else:
                self.second, self.first = second, first

        def call(self, x):
            second, first = self.parts if storage == "list" else (self.second, self.first)
            return x @ first + second

    return CreationOrder()


@pytest.mark.parametrize("storage", ["reversed_attributes", "list"])
def test_layer_weights_are_listed_in_creation_order_like_keras(storage):
    x = np.arange(8, dtype="float32").reshape(4, 2)
    theirs = _creation_order_layer(keras.layers.Layer, storage)
    theirs(x)
    ours = _creation_order_layer(loopax.layers.Layer, storage)
    ours(x)
    assert [v.name for v in ours.weights] == [v.name for v in theirs.weights] == [
        "first", "second"]
    rng = np.random.default_rng(0)
    theirs.set_weights([rng.normal(size=w.shape).astype("float32") for w in theirs.weights])
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=1e-6)


def test_layer_weights_keep_creation_order_through_a_weights_file(tmp_path):
    x = np.ones((2, 2), "float32")
    model = loopax.Sequential([loopax.Input((2,)),
                               _creation_order_layer(loopax.layers.Layer, "reversed_attributes")])
    model.layers[0].set_weights([np.full((2, 3), 2.0, "float32"), np.arange(3.0, dtype="float32")])
    model.save_weights(tmp_path / "m.weights.h5")
    other = loopax.Sequential([loopax.Input((2,)),
                               _creation_order_layer(loopax.layers.Layer, "list")])
    other.load_weights(tmp_path / "m.weights.h5")
    np.testing.assert_allclose(np.asarray(other(x)), np.asarray(model(x)))


def test_created_weights_come_before_other_variables_held_in_attributes():
    class Mixed(loopax.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.counter = loopax.Variable(0.0, trainable=False, name="counter")

        def build(self, input_shape):
            self.scale = self.add_weight((), initializer="ones", name="scale")

        def call(self, x):
            return x * self.scale

    layer = Mixed()
    layer(np.ones((1, 2), "float32"))
    assert [v.name for v in layer.variables] == ["scale", "counter"]


# ---- optimizers ---------------------------------------------------------------
def _momentum_sgd(base, early):
    """Keras-style momentum SGD; `early` sets its attributes before
    `super().__init__` (Keras refuses that; loopax allows it)."""

    class EarlyAttributes(base):
        def __init__(self, learning_rate=0.1, momentum=0.9, **kwargs):
            if early:
                self.momentum = momentum
                self.momentums = []
            super().__init__(learning_rate=learning_rate, **kwargs)
            self.momentum = momentum
            self.momentums = []

        def build(self, var_list):
            if self.built:
                return
            super().build(var_list)
            self.momentums = [self.add_variable_from_reference(v, "m") for v in var_list]

        def update_step(self, gradient, variable, learning_rate):
            m = self.momentums[self._get_variable_index(variable)]
            self.assign(m, self.momentum * m - learning_rate * gradient)
            self.assign_add(variable, m)

    return EarlyAttributes()


def test_optimizer_with_attributes_set_before_init_keeps_keras_order():
    init = [np.array([[1.0, -2.0]], "float32"), np.array([0.5], "float32")]
    grads = [[np.array([[0.1, 0.2]], "float32"), np.array([-0.3], "float32")],
             [np.array([[0.4, -0.1]], "float32"), np.array([0.2], "float32")]]
    theirs = _momentum_sgd(keras.optimizers.Optimizer, early=False)
    their_vars = [keras.Variable(v, name=n) for v, n in zip(init, ("w", "b"))]
    theirs.build(their_vars)
    ours = _momentum_sgd(optimizers.Optimizer, early=True)
    our_vars = [loopax.Variable(v, name=n) for v, n in zip(init, ("w", "b"))]
    ours.build(our_vars)

    names = [v.name for v in ours.variables]
    assert names[:2] == ["iteration", "learning_rate"]
    assert names == [v.name for v in theirs.variables]
    assert [id(v) for v in ours.variables] == [id(v) for v in ours._variables]

    # The stateless API takes `optimizer.variables` in that order.
    step = jax.jit(lambda opt, g, tv: ours.stateless_apply(opt, g, tv))
    trainable, opt_values = [v.value for v in our_vars], [v.value for v in ours.variables]
    for g in grads:
        theirs.apply(g, their_vars)
        trainable, opt_values = step(opt_values, [jnp.asarray(a) for a in g], trainable)
    for a, b in zip(trainable, their_vars):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    for a, b in zip(opt_values, theirs.variables):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
