"""BatchNormalization and LayerNormalization against NumPy formulas."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from layer_checks import (
    assert_trees_close,
    check_stateless_matches_stateful,
    grads_through_stateless_call,
    reference_grads,
)

import loopax
from loopax import layers

rng = np.random.default_rng(3)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def built_bn(x, **kwargs):
    layer = layers.BatchNormalization(**kwargs)
    layer.build(x.shape)
    layer.gamma.assign(1 + 0.1 * randn(x.shape[layer.axis]))
    layer.beta.assign(randn(x.shape[layer.axis]))
    return layer


# ---- BatchNormalization -----------------------------------------------------

def test_batch_norm_variables_are_keras_named_and_ordered():
    layer = layers.BatchNormalization()
    layer.build((None, 3))
    assert [v.name for v in layer.weights] == ["gamma", "beta", "moving_mean", "moving_variance"]
    assert layer.trainable_variables == [layer.gamma, layer.beta]
    assert layer.non_trainable_variables == [layer.moving_mean, layer.moving_variance]
    assert layer.momentum == 0.99 and layer.epsilon == 1e-3


def test_batch_norm_training_uses_batch_stats_and_updates_moving_stats():
    x = 2 + 3 * randn(8, 3)
    layer = built_bn(x)
    gamma, beta = layer.gamma.numpy(), layer.beta.numpy()
    out = check_stateless_matches_stateful(layer, x, training=True)
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(out, gamma * (x - mean) / np.sqrt(var + 1e-3) + beta,
                               rtol=1e-4, atol=1e-5)
    # moving = 0.99 · moving + 0.01 · batch statistic, from (0, 1).
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.01 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.moving_variance.numpy(), 0.99 + 0.01 * var, rtol=1e-5)


def test_batch_norm_inference_uses_moving_stats_and_updates_nothing():
    x = randn(4, 3)
    layer = built_bn(x)
    layer.moving_mean.assign(np.array([0.5, -1.0, 2.0], "float32"))
    layer.moving_variance.assign(np.array([4.0, 0.25, 1.0], "float32"))
    for training in (False, None):
        out = check_stateless_matches_stateful(layer, x, training=training)
        want = (layer.gamma.numpy() * (x - [0.5, -1.0, 2.0]) / np.sqrt(np.array([4.0, 0.25, 1.0])
                + 1e-3) + layer.beta.numpy())
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(layer.moving_mean.numpy(), [0.5, -1.0, 2.0])


def test_batch_norm_frozen_layer_runs_in_inference_mode():
    x = randn(4, 3)
    layer = built_bn(x)
    layer.trainable = False
    out = layer(x, training=True)
    np.testing.assert_allclose(out, layer.gamma.numpy() * x / np.sqrt(1 + 1e-3)
                               + layer.beta.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(layer.moving_mean.numpy(), 0)


def test_batch_norm_axis_1_on_images():
    x = randn(2, 3, 2, 2)  # channels first
    layer = built_bn(x, axis=1, momentum=0.9)
    out = layer(x, training=True)
    mean, var = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)
    g, b = layer.gamma.numpy()[:, None, None], layer.beta.numpy()[:, None, None]
    np.testing.assert_allclose(out, g * (x - mean) / np.sqrt(var + 1e-3) + b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.1 * mean.ravel(), rtol=1e-5, atol=1e-6)


def test_batch_norm_gradients_flow_through_batch_statistics():
    x, g = randn(6, 3), randn(6, 3)
    layer = built_bn(x)

    def ref(params, x):
        mean, var = jnp.mean(x, 0), jnp.mean((x - jnp.mean(x, 0)) ** 2, 0)
        return params[0] * (x - mean) / jnp.sqrt(var + 1e-3) + params[1]

    got = grads_through_stateless_call(layer, x, g, training=True)
    want = reference_grads(ref, [layer.gamma.value, layer.beta.value], x, g)
    assert_trees_close(got, want, rtol=1e-4, atol=1e-4)


def test_batch_norm_in_jitted_stateless_loop_converges_moving_mean():
    x = 5 + randn(16, 2)
    layer = layers.BatchNormalization(momentum=0.5)
    layer.build(x.shape)
    tv = [v.value for v in layer.trainable_variables]
    step = jax.jit(lambda nt: layer.stateless_call(tv, nt, x, training=True)[1])
    nt = [v.value for v in layer.non_trainable_variables]
    for _ in range(30):
        nt = step(nt)
    np.testing.assert_allclose(nt[0], x.mean(0), rtol=1e-4)
    np.testing.assert_allclose(nt[1], x.var(0), rtol=1e-4)
    np.testing.assert_array_equal(layer.moving_mean.numpy(), 0)  # the layer is untouched


def test_batch_norm_errors_and_symbolic():
    layer = layers.BatchNormalization(name="bn")
    layer(randn(2, 3))
    with pytest.raises(ValueError, match=r"'bn'.*\(2, 4\)"):
        layer(randn(2, 4))
    assert layers.BatchNormalization()(loopax.Input(shape=(5, 3))).shape == (None, 5, 3)


# ---- LayerNormalization -----------------------------------------------------

def test_layer_norm_matches_numpy_and_gradients():
    x, g = randn(2, 3, 4), randn(2, 3, 4)
    layer = layers.LayerNormalization()
    layer.build(x.shape)
    layer.gamma.assign(1 + randn(4))
    layer.beta.assign(randn(4))
    out = check_stateless_matches_stateful(layer, x)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    want = layer.gamma.numpy() * (x - mean) / np.sqrt(var + 1e-3) + layer.beta.numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)

    def ref(p, x):
        m = jnp.mean(x, -1, keepdims=True)
        v = jnp.mean((x - m) ** 2, -1, keepdims=True)
        return p[0] * (x - m) / jnp.sqrt(v + 1e-3) + p[1]

    assert_trees_close(grads_through_stateless_call(layer, x, g),
                       reference_grads(ref, [layer.gamma.value, layer.beta.value], x, g),
                       rtol=1e-4, atol=1e-4)


def test_layer_norm_over_several_axes_and_rms_scaling():
    x = randn(2, 3, 4)
    layer = layers.LayerNormalization(axis=[1, 2], center=False)
    out = layer(x)
    assert layer.gamma.shape == (3, 4) and layer.beta is None
    mean, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    rms = layers.LayerNormalization(rms_scaling=True, epsilon=1e-6)
    # Keras 3's (deprecated) rms_scaling divides by sqrt(variance), uncentred.
    np.testing.assert_allclose(rms(x), x / np.sqrt(x.var(-1, keepdims=True) + 1e-6),
                               rtol=1e-4, atol=1e-5)
    assert [v.name for v in rms.weights] == ["gamma"]


def test_layer_norm_feature_size_error():
    layer = layers.LayerNormalization(name="ln")
    layer(randn(2, 4))
    with pytest.raises(ValueError, match=r"'ln'.*\(2, 5\)"):
        layer(randn(2, 5))
