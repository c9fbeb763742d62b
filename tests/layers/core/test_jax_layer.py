"""JaxLayer and FlaxLayer against Keras 3.15's (the same pure-JAX functions and
Flax modules, the same initial params): outputs, a few fit() steps, state
updates; saving and loading (the weights in the file, the code registered or
passed in); and the errors for functions it cannot call."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

keras = pytest.importorskip("keras")
if keras.backend.backend() != "jax":
    pytest.skip("the Keras reference runs on its JAX backend", allow_module_level=True)

import loopax  # noqa: E402
from loopax import layers  # noqa: E402
from loopax.saving import load_model, register_keras_serializable  # noqa: E402

rng = np.random.default_rng(22)
X = rng.standard_normal((32, 4)).astype("float32")
Y = rng.standard_normal((32, 3)).astype("float32")


def mlp_params():
    return {"hidden": {"w": rng.standard_normal((4, 5)).astype("float32"),
                       "b": np.zeros(5, "float32")},
            "out": [rng.standard_normal((5, 3)).astype("float32"),
                    rng.standard_normal(3).astype("float32")]}


@register_keras_serializable(package="jaxlayer_test")
def mlp_init(rng, inputs):
    k1, k2 = jax.random.split(rng)
    return {"hidden": {"w": jax.random.normal(k1, (inputs.shape[-1], 5)), "b": jnp.zeros(5)},
            "out": [jax.random.normal(k2, (5, 3)), jnp.zeros(3)]}


@register_keras_serializable(package="jaxlayer_test")
def mlp_apply(params, inputs):
    h = jnp.tanh(inputs @ params["hidden"]["w"] + params["hidden"]["b"])
    w, b = params["out"]
    return h @ w + b


def counting_apply(params, state, inputs, training):
    """An MLP whose state counts the training calls."""
    return mlp_apply(params, inputs), state + 1 if training else state


def model_with(lib, layer):
    inputs = lib.Input((4,))
    return lib.Model(inputs, layer(inputs))


def fit_steps(model, lib, steps=3):
    model.compile(lib.optimizers.SGD(0.1), "mse")
    history = model.fit(X[:8 * steps], Y[:8 * steps], batch_size=8, epochs=1, shuffle=False,
                        verbose=0)
    return history.history["loss"], [np.asarray(w) for w in model.get_weights()]


def assert_same_training(ours, theirs):
    our_loss, our_weights = ours
    their_loss, their_weights = theirs
    np.testing.assert_allclose(our_loss, their_loss, rtol=1e-5)
    assert len(our_weights) == len(their_weights)
    for a, b in zip(our_weights, their_weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_jax_layer_outputs_and_fit_match_keras():
    params = mlp_params()
    ours = model_with(loopax, layers.JaxLayer(mlp_apply, params=params))
    theirs = model_with(keras, keras.layers.JaxLayer(mlp_apply, params=params))
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0),
                               rtol=1e-5, atol=1e-6)
    assert [w.trainable for w in ours.weights] == [w.trainable for w in theirs.weights]
    assert_same_training(fit_steps(ours, loopax), fit_steps(theirs, keras))


def test_jax_layer_state_counts_training_steps_as_keras():
    params, state = mlp_params(), np.zeros((), "int32")
    ours = layers.JaxLayer(counting_apply, params=params, state=state)
    theirs = keras.layers.JaxLayer(counting_apply, params=params, state=state)
    assert_same_training(fit_steps(model_with(loopax, ours), loopax, steps=3),
                         fit_steps(model_with(keras, theirs), keras, steps=3))
    assert int(ours.state.value) == 3 == int(theirs.state.value)
    ours(X)   # inference: the state is left alone
    assert int(ours.state.value) == 3
    assert [w.trainable for w in ours.weights][-1] is False


def test_jax_layer_init_fn_builds_params_from_the_input_shape():
    loopax.utils.set_random_seed(3)
    layer = layers.JaxLayer(mlp_apply, mlp_init)
    out = layer(X)
    assert out.shape == (32, 3)
    assert layer.params["hidden"]["w"].shape == (4, 5)
    assert len(layer.trainable_weights) == 4 and not layer.non_trainable_weights
    expected = mlp_apply(jax.tree_util.tree_map(
        lambda v: v.value, layer.params, is_leaf=lambda v: isinstance(v, loopax.Variable)), X)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_jax_layer_rng_is_a_fresh_key_in_training_and_none_in_inference():
    seen = []

    def noisy(rng, inputs, training):
        seen.append(rng)
        return inputs + jax.random.normal(rng, inputs.shape) if training else inputs

    layer = layers.JaxLayer(noisy, seed=5)
    a, b = layer(X, training=True), layer(X, training=True)
    assert seen[0].dtype == jnp.uint32 and seen[0].shape == (2,)   # Keras's raw key
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(layer(X, training=False), X)
    assert seen[-1] is None


def test_jax_layer_saves_and_loads_with_registered_functions(tmp_path):
    model = model_with(loopax, layers.JaxLayer(mlp_apply, mlp_init))
    fit_steps(model, loopax, steps=1)
    path = str(tmp_path / "jax_layer.keras")
    model.save(path)
    loaded = load_model(path)
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0),
                               rtol=1e-6)


def test_jax_layer_made_from_params_without_init_fn_explains_it_cannot_be_reloaded(tmp_path):
    model = model_with(loopax, layers.JaxLayer(mlp_apply, params=mlp_params()))
    path = str(tmp_path / "params_only.keras")
    model.save(path)
    with pytest.raises(ValueError, match="without an `init_fn`.*load_weights"):
        load_model(path)


@pytest.mark.parametrize("call_fn, message", [
    pytest.param(lambda params, x: x, "no argument named `inputs`", id="missing-inputs"),
    pytest.param(lambda params, inputs, mask: inputs, r"\['mask'\]", id="unknown-argument"),
])
def test_jax_layer_refuses_functions_it_cannot_call(call_fn, message):
    with pytest.raises(ValueError, match=message):
        layers.JaxLayer(call_fn, params={})
    with pytest.raises(ValueError):   # Keras refuses them too
        keras.layers.JaxLayer(call_fn, params={})


def test_jax_layer_needs_init_fn_or_params():
    with pytest.raises(ValueError, match="pass `init_fn`"):
        layers.JaxLayer(mlp_apply)


def test_jax_layer_state_of_another_structure_is_a_clear_error():
    def bad(params, state, inputs):
        return inputs, {"count": [jnp.ones(())]}

    layer = layers.JaxLayer(bad, params={}, state={"count": jnp.zeros(())})
    with pytest.raises(ValueError, match="state of structure"):
        layer(X)


# ---- FlaxLayer ---------------------------------------------------------------

flax = pytest.importorskip("flax")
nn = flax.linen


class NormalizedMLP(nn.Module):
    """Dense -> BatchNorm -> Dense: params and a `batch_stats` state."""

    features: int = 3

    @nn.compact
    def __call__(self, inputs, training):
        x = nn.Dense(6)(inputs)
        x = nn.BatchNorm(use_running_average=not training, momentum=0.9)(x)
        return nn.Dense(self.features)(nn.relu(x))

    def get_config(self):
        return {"features": self.features}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


register_keras_serializable(package="jaxlayer_test")(NormalizedMLP)


class DropoutMLP(nn.Module):
    @nn.compact
    def __call__(self, inputs, training):
        x = nn.Dropout(0.5, deterministic=not training)(nn.Dense(8)(inputs))
        return nn.Dense(3)(x)


def test_flax_layer_outputs_fit_and_batch_stats_match_keras():
    module = NormalizedMLP()
    variables = module.init(jax.random.key(0), X[:2], training=False)
    ours = layers.FlaxLayer(module, variables=variables)
    theirs = keras.layers.FlaxLayer(module, variables=variables)
    our_model, their_model = model_with(loopax, ours), model_with(keras, theirs)
    np.testing.assert_allclose(our_model.predict(X, verbose=0),
                               their_model.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    assert ([w.trainable for w in our_model.weights]
            == [w.trainable for w in their_model.weights])
    assert_same_training(fit_steps(our_model, loopax), fit_steps(their_model, keras))
    mean = ours.state["batch_stats"]["BatchNorm_0"]["mean"].value
    assert np.abs(mean).max() > 0   # the running mean moved during fit


def test_flax_layer_dropout_gets_a_fresh_rng_in_training_only():
    layer = layers.FlaxLayer(DropoutMLP(), seed=1)
    a, b = layer(X, training=True), layer(X, training=True)
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(layer(X, training=False), layer(X, training=False))


def test_flax_layer_saves_and_loads_registered_module(tmp_path):
    model = model_with(loopax, layers.FlaxLayer(NormalizedMLP(features=3)))
    fit_steps(model, loopax, steps=2)
    path = str(tmp_path / "flax_layer.keras")
    model.save(path)
    loaded = load_model(path)
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0),
                               rtol=1e-6)
    assert loaded.layers[-1].module.features == 3


def test_flax_layer_loads_unregistered_module_from_custom_objects_only(tmp_path):
    model = model_with(loopax, layers.FlaxLayer(DropoutMLP()))
    path = str(tmp_path / "dropout.keras")
    model.save(path)
    with pytest.raises(ValueError, match="custom_objects=.*DropoutMLP"):
        load_model(path)
    loaded = load_model(path, custom_objects={"DropoutMLP": DropoutMLP})
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0),
                               rtol=1e-6)


def test_flax_layer_refuses_what_is_not_a_linen_module():
    with pytest.raises(TypeError, match="flax.linen.Module"):
        layers.FlaxLayer(mlp_apply)


class TwoMethods(nn.Module):
    @nn.compact
    def forward(self, inputs, deterministic):
        x = nn.Dropout(0.5, deterministic=deterministic)(nn.Dense(4)(inputs))
        return nn.Dense(3)(x)

    @nn.compact
    def encode(self, inputs):
        return nn.Dense(3)(inputs)


@register_keras_serializable(package="jaxlayer_test")
def forward_wrapper(module, inputs, training):
    return module.forward(inputs, not training)


@pytest.mark.parametrize("method", [forward_wrapper, "encode"],
                         ids=["registered-function", "method-name"])
def test_flax_layer_method_is_saved_by_name_and_loaded(tmp_path, method):
    layer = layers.FlaxLayer(TwoMethods(), method=method)
    model = model_with(loopax, layer)
    path = str(tmp_path / "method.keras")
    model.save(path)
    loaded = load_model(path, custom_objects={"TwoMethods": TwoMethods})
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0),
                               rtol=1e-6)
    assert layer.get_config()["method"] == (
        "encode" if method == "encode" else
        {"class_name": "function", "config": "jaxlayer_test>forward_wrapper"})
