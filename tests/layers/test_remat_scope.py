"""`loopax.RematScope`: layers created inside it run `call` through `jax.checkpoint`.

The layers wrapped are Keras 3's choice on the same model (the `remat2` equations
of the gradient's jaxpr match Keras's one for one), gradients equal a plain-JAX
reference, fit() trains bit-identically to the same model without the scope, and
nothing about the scope reaches the model's config or file.
"""

import json
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

X = np.linspace(-1.0, 1.0, 20, dtype="float32").reshape(5, 4)
Y = np.linspace(0.5, -0.5, 15, dtype="float32").reshape(5, 3)


def remat_equations(closed_jaxpr):
    """One entry per `jax.checkpoint` equation (nested ones too): the sorted
    avals of its outputs, which tell the layer apart (its output, or its
    weights' and inputs' cotangents in the backward pass)."""
    found = []

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name in ("remat2", "checkpoint"):
                found.append(tuple(sorted(str(v.aval) for v in eqn.outvars)))
            for param in eqn.params.values():
                inner = getattr(param, "jaxpr", param)
                if hasattr(inner, "eqns"):
                    walk(inner)
    walk(closed_jaxpr.jaxpr)
    return sorted(found)


def mlp(lib, name_prefix=""):
    """Dense(8, relu) -> Dense(6, tanh) -> Dense(3), a functional model."""
    inputs = lib.Input((4,))
    h = lib.layers.Dense(8, activation="relu", name="d1")(inputs)
    h = lib.layers.Dense(6, activation="tanh", name="d2")(h)
    outputs = lib.layers.Dense(3, name="d3")(h)
    return lib.Model(inputs, outputs)


def gradient_jaxpr(model):
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]

    def loss(trainable, non_trainable, x):
        y, _ = model.stateless_call(trainable, non_trainable, x, training=True)
        return jnp.sum(y ** 2)
    return jax.make_jaxpr(jax.grad(loss))(trainable, non_trainable, X)


SCOPES = {
    "full": dict(mode="full"),
    "activations": dict(mode="activations"),
    "larger_than_20": dict(mode="larger_than", output_size_threshold=20),
    "larger_than_40": dict(mode="larger_than", output_size_threshold=40),
    "list_of_layers": dict(mode="list_of_layers", layer_names=["d1", "d3"]),
    "none": dict(mode=None),
}


@pytest.mark.parametrize("scope", SCOPES.values(), ids=SCOPES.keys())
def test_the_layers_rematerialized_are_keras_s(scope):
    def built(lib):
        with lib.RematScope(**scope):
            return mlp(lib)
    ours = remat_equations(gradient_jaxpr(built(loopax)))
    theirs = remat_equations(gradient_jaxpr(built(keras)))
    assert ours == theirs
    # every output here has at most 40 elements (5 x 8); mode None picks nothing
    picks_some = scope["mode"] is not None and scope.get("output_size_threshold") != 40
    assert bool(ours) == picks_some


XI = np.linspace(-1.0, 1.0, 2 * 6 * 6 * 3, dtype="float32").reshape(2, 6, 6, 3)


def cnn(lib):
    """Conv2D(4, relu) (output 2*6*6*4 = 288 elements) -> MaxPooling2D (72) ->
    Flatten (72) -> Activation(tanh) (72) -> Dense(2) (4)."""
    inputs = lib.Input((6, 6, 3))
    h = lib.layers.Conv2D(4, 3, activation="relu", padding="same")(inputs)
    h = lib.layers.Flatten()(lib.layers.MaxPooling2D()(h))
    h = lib.layers.Activation("tanh")(h)
    return lib.Model(inputs, lib.layers.Dense(2)(h))


def cnn_gradient_jaxpr(model):
    def loss(trainable, x):
        y, _ = model.stateless_call(trainable, [], x, training=True)
        return jnp.sum(y ** 2)
    return jax.make_jaxpr(jax.grad(loss))([v.value for v in model.trainable_variables], XI)


@pytest.mark.parametrize("mode", ["full", "activations"])
def test_the_convolutional_layers_rematerialized_are_keras_s(mode):
    def built(lib):
        with lib.RematScope(mode=mode):
            return cnn(lib)
    ours = remat_equations(cnn_gradient_jaxpr(built(loopax)))
    assert ours and ours == remat_equations(cnn_gradient_jaxpr(built(keras)))


@pytest.mark.parametrize("threshold, layers", [(60, 4), (100, 1), (300, 0)],
                         ids=["over_60", "over_100", "over_300"])
def test_larger_than_counts_each_output_s_elements(threshold, layers):
    """One backward checkpoint per layer whose output is over the threshold
    (sizes in `cnn`'s docstring). Keras 3.15.1's "larger_than" raises on this
    model under `jax.grad` (AttributeError: LinearizeTracer has no attribute
    sparse), so the sizes are the reference."""
    with loopax.RematScope(mode="larger_than", output_size_threshold=threshold):
        model = cnn(loopax)
    assert len(remat_equations(cnn_gradient_jaxpr(model))) == layers


def test_nested_scopes_and_creation_time_as_keras():
    """The innermost scope at *creation* decides; a scope at call time does not."""
    def built(lib):
        with lib.RematScope(mode="full"):
            inputs = lib.Input((4,))
            h = lib.layers.Dense(8, activation="relu", name="d1")(inputs)
            with lib.RematScope(mode=None):
                d2 = lib.layers.Dense(6, name="d2")
            with lib.RematScope(mode="list_of_layers", layer_names=["d3"]):
                d3 = lib.layers.Dense(3, name="d3")
                d4 = lib.layers.Dense(3, name="d4")
        outside = lib.layers.Dense(2, name="outside")
        with lib.RematScope(mode="full"):  # at call time only: no effect
            outputs = outside(d4(d3(d2(h))))
        return lib.Model(inputs, outputs)
    ours = remat_equations(gradient_jaxpr(built(loopax)))
    assert ours == remat_equations(gradient_jaxpr(built(keras)))
    assert len(ours) == 2  # the backward passes of d1 and d3 (recomputing their forward)


def _reference_loss(weights, x):
    """The MLP of `mlp()` in plain JAX."""
    k1, b1, k2, b2, k3, b3 = weights
    h = jax.nn.relu(x @ k1 + b1)
    h = jnp.tanh(h @ k2 + b2)
    return jnp.sum((h @ k3 + b3) ** 2)


@pytest.mark.parametrize("scope", SCOPES.values(), ids=SCOPES.keys())
def test_gradients_equal_plain_jax(scope):
    with loopax.RematScope(**scope):
        model = mlp(loopax)
    weights = [v.value for v in model.trainable_variables]

    def loss(weights):
        y, _ = model.stateless_call(weights, [], X)
        return jnp.sum(y ** 2)
    ours = jax.jit(jax.grad(loss))(weights)
    expected = jax.jit(jax.grad(_reference_loss))(weights, X)
    for g, e in zip(ours, expected):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def test_eager_call_and_gradient_tape_are_unchanged():
    with loopax.RematScope(mode="full"):
        model = mlp(loopax)
    weights = [np.asarray(v.value) for v in model.trainable_variables]
    np.testing.assert_allclose(np.asarray(model(X)),
                               np.asarray(jax.jit(lambda w, x: _forward(w, x))(weights, X)),
                               rtol=1e-6, atol=1e-6)
    with loopax.GradientTape() as tape:
        loss = loopax.ops.sum(model(X) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    expected = jax.grad(_reference_loss)(weights, X)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-5, atol=1e-6)


def _forward(weights, x):
    k1, b1, k2, b2, k3, b3 = weights
    return jnp.tanh(jax.nn.relu(x @ k1 + b1) @ k2 + b2) @ k3 + b3


class Penalized(loopax.layers.Layer):
    """Dense-like layer that adds an activity penalty with `add_loss` in `call`."""

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 3), initializer="ones")

    def call(self, x):
        y = x @ self.kernel
        self.add_loss(0.01 * jnp.sum(y ** 2))
        return y


def stateful_model():
    """Dense, BatchNormalization (moving statistics assigned in call), Dropout
    (an RNG seed state), a layer with `add_loss`."""
    inputs = loopax.Input((4,))
    h = loopax.layers.Dense(8, activation="relu", use_bias=False)(inputs)
    h = loopax.layers.BatchNormalization()(h)
    h = loopax.layers.Dropout(0.3, seed=1)(h)
    outputs = Penalized()(h)
    return loopax.Model(inputs, outputs)


def trained(scope, builder, optimizer):
    loopax.random.set_random_seed(3)
    with scope:
        model = builder()
    model.compile(optimizer=optimizer, loss="mse")
    history = model.fit(X, Y, batch_size=5, epochs=3, verbose=0)
    return model, history.history["loss"]


@pytest.mark.parametrize("mode", ["full", "activations", "list_of_layers"])
def test_fit_of_a_dense_model_is_bit_identical(mode):
    plain, plain_loss = trained(loopax.RematScope(mode=None), lambda: mlp(loopax), "sgd")
    remat_model, remat_loss = trained(
        loopax.RematScope(mode=mode, layer_names=["d1", "d2", "d3"]), lambda: mlp(loopax), "sgd")
    assert remat_loss == plain_loss
    for a, b in zip(plain.variables, remat_model.variables):
        np.testing.assert_array_equal(np.asarray(a.value), np.asarray(b.value), err_msg=a.path)


@pytest.mark.parametrize("mode", ["full", "larger_than"])
def test_fit_with_state_and_losses_inside_the_checkpoint(mode):
    """State assigned inside the checkpoint (BatchNormalization's moving
    statistics, Dropout's seed) and losses added there come out of it: fit()
    matches the model without the scope. Equal to float32 rounding, not bit for
    bit: `jax.checkpoint` changes how XLA fuses loopax's compiled step (with
    Adam and MSE, checkpointing only an activation function, or the call as a
    closure, drifts the same 1 ulp; with SGD the Dense model is bit-identical,
    above).
    Keras 3.15.1 cannot run these layers in a scope in training at all
    (`training` becomes a traced array)."""
    plain, plain_loss = trained(loopax.RematScope(mode=None), stateful_model, "sgd")
    remat_model, remat_loss = trained(
        loopax.RematScope(mode=mode, output_size_threshold=10), stateful_model, "sgd")
    np.testing.assert_allclose(remat_loss, plain_loss, rtol=1e-6)
    for a, b in zip(plain.variables, remat_model.variables):
        np.testing.assert_allclose(np.asarray(a.value), np.asarray(b.value), rtol=1e-5,
                                   atol=1e-6, err_msg=a.path)
    assert "remat2" in str(gradient_jaxpr(remat_model))
    for model in (plain, remat_model):   # an eager call: losses as concrete values
        model(X)
    np.testing.assert_allclose(np.asarray(remat_model.losses[0]),
                               np.asarray(plain.losses[0]), rtol=1e-5)


def test_the_scope_is_not_saved(tmp_path):
    """As Keras: the model file of a model built in a scope is the one built without."""
    def saved(mode, path):
        loopax.random.set_random_seed(0)
        loopax.utils.clear_session()
        with loopax.RematScope(mode=mode):
            model = mlp(loopax)
        model.save(path)
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read("config.json"))
    assert saved("full", tmp_path / "a.keras") == saved(None, tmp_path / "b.keras")
    loaded = loopax.saving.load_model(tmp_path / "a.keras")
    assert "remat2" not in str(gradient_jaxpr(loaded))


def test_invalid_mode_names_the_choices():
    with pytest.raises(ValueError, match="mode='everything'.*'full'.*'list_of_layers'"):
        loopax.RematScope(mode="everything")
    with pytest.raises(ValueError):  # Keras refuses it too
        keras.RematScope(mode="everything")


def test_a_string_of_layer_names_warns_and_matches_as_keras():
    """Keras tests `name in layer_names`: with a string, a substring match."""
    def built(lib):
        with lib.RematScope(mode="list_of_layers", layer_names="d1d3"):
            return mlp(lib)
    with pytest.warns(UserWarning, match=r"layer_names='d1d3' is a string.*\['d1d3'\]"):
        ours = remat_equations(gradient_jaxpr(built(loopax)))
    assert ours == remat_equations(gradient_jaxpr(built(keras)))
    assert len(ours) == 2   # d1 and d3
