"""Dtype policies: names, the global policy, and what a layer does with its policy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import mixed_precision


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    mixed_precision.set_global_policy(None)


@pytest.mark.parametrize("name, compute, variable", [
    ("mixed_bfloat16", "bfloat16", "float32"), ("mixed_float16", "float16", "float32"),
    ("float32", "float32", "float32"), ("bfloat16", "bfloat16", "bfloat16")])
def test_policy_names_give_compute_and_variable_dtypes(name, compute, variable):
    policy = mixed_precision.DTypePolicy(name)
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == (name, compute, variable)
    assert mixed_precision.Policy is mixed_precision.DTypePolicy
    assert loopax.dtype_policies.get({"class_name": "DTypePolicy",
                                      "config": {"name": name}}) == policy


def test_unknown_policy_name_is_a_clear_error():
    with pytest.raises(ValueError, match="mixed_bfloat16"):
        mixed_precision.DTypePolicy("mixed_float8")
    with pytest.raises(ValueError, match="policy name"):
        mixed_precision.set_global_policy(3)


def test_global_policy_is_the_default_of_new_layers_and_resets_to_floatx():
    assert mixed_precision.global_policy().name == "float32"
    loopax.config.set_dtype_policy("mixed_bfloat16")
    assert loopax.config.dtype_policy().name == "mixed_bfloat16"
    layer = loopax.layers.Dense(2)
    assert layer.dtype_policy.name == "mixed_bfloat16"
    assert (layer.compute_dtype, layer.variable_dtype, layer.dtype) == (
        "bfloat16", "float32", "float32")
    assert loopax.layers.Dense(2, dtype="float32").compute_dtype == "float32"
    mixed_precision.set_global_policy(None)
    assert loopax.layers.Dense(2).dtype_policy.name == "float32"


def test_layer_accepts_a_policy_object_and_round_trips_it_through_its_config():
    layer = loopax.layers.Dense(3, dtype=mixed_precision.DTypePolicy("mixed_float16"))
    layer(np.ones((1, 2), "float32"))
    assert layer.kernel.dtype == jnp.float32
    clone = loopax.layers.Dense.from_config(layer.get_config())
    assert clone.dtype_policy == layer.dtype_policy
    layer.dtype_policy = "float32"
    assert layer.compute_dtype == "float32"


class Probe(loopax.layers.Layer):
    """Records the dtypes its call sees (at trace time too)."""

    def build(self, input_shape):
        self.w = self.add_weight((input_shape[-1], 2), "ones", name="w")
        self.stat = self.add_weight((2,), "zeros", name="stat", trainable=False,
                                    autocast=False)
        self.seen = []

    def call(self, x):
        self.seen.append((x.dtype, self.w.value.dtype, self.stat.value.dtype))
        return x @ self.w + self.stat.value.astype(x.dtype)


def test_inputs_and_weights_are_cast_inside_call_of_a_mixed_layer():
    layer = Probe(dtype="mixed_bfloat16")
    y = layer(np.ones((2, 3), "float32"))
    assert y.dtype == jnp.bfloat16
    assert layer.seen[-1] == (jnp.bfloat16, jnp.bfloat16, jnp.float32)
    # Outside call the weights are float32, and integer inputs are not cast.
    assert layer.w.value.dtype == jnp.float32
    cast = loopax.layers.Activation("linear", dtype="mixed_bfloat16")(np.ones(2, "int32"))
    assert cast.dtype == jnp.int32


def test_a_float32_layer_inside_a_mixed_model_computes_in_float32():
    mixed_precision.set_global_policy("mixed_bfloat16")
    inputs = loopax.Input((3,))
    hidden = Probe()(inputs)
    head = Probe(dtype="float32")
    outputs = head(hidden)
    model = loopax.Model(inputs, outputs)
    out = model(np.ones((2, 3), "float32"))
    assert out.dtype == jnp.float32 and outputs.dtype == "float32"
    assert head.seen[-1] == (jnp.float32, jnp.float32, jnp.float32)


def test_gradients_reach_float32_weights_through_the_cast():
    layer = loopax.layers.Dense(2, dtype="mixed_bfloat16")
    x = np.arange(6, dtype="float32").reshape(2, 3)
    layer(x)

    def loss(trainable):
        y, _ = layer.stateless_call(trainable, [], x)
        return jnp.sum(y.astype(jnp.float32))

    grads = jax.grad(loss)(layer.trainable_variables)
    assert [g.dtype for g in grads] == [jnp.float32, jnp.float32]
    np.testing.assert_allclose(np.asarray(grads[0].value),
                               np.repeat(x.sum(0)[:, None], 2, axis=1), rtol=1e-2)


def _mixed_model():
    inputs = loopax.Input((4,))
    probe = Probe()
    h = loopax.layers.Dense(8, activation="relu")(probe(inputs))
    h = loopax.layers.BatchNormalization()(h)
    outputs = loopax.layers.Dense(1)(h)
    return loopax.Model(inputs, outputs), probe


def _train_mixed(steps_per_execution):
    mixed_precision.set_global_policy("mixed_bfloat16")
    loopax.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = x.sum(1, keepdims=True)
    model, probe = _mixed_model()
    model.compile(loopax.optimizers.SGD(0.05), "mse", steps_per_execution=steps_per_execution)
    history = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    return model, probe, history, x, y


def test_model_trains_under_mixed_bfloat16_with_float32_variables():
    model, probe, history, x, y = _train_mixed(4)
    assert all(v.dtype == jnp.float32 for v in model.variables)
    # Inside call (traced by fit): bfloat16 inputs and weights, float32 autocast=False stat.
    assert probe.seen[-1] == (jnp.bfloat16, jnp.bfloat16, jnp.float32)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert model.predict(x, verbose=0).dtype == np.dtype(jnp.bfloat16)
    # The loss is computed in float32 from the bfloat16 outputs.
    assert model.compute_loss(x, y, model(x)).dtype == jnp.float32
    # Fused (4 steps per call) and unfused training give the same result.
    model1, _, history1, _, _ = _train_mixed(1)
    np.testing.assert_array_equal(history1.history["loss"], history.history["loss"])
    for a, b in zip(model1.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
