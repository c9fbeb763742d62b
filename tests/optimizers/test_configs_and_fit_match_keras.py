"""Ftrl, Lamb and Muon: configs, names, errors and `model.fit`, against
Keras 3 (the update math is compared step by step in test_updates_match_keras.py)."""

import inspect
from unittest import mock

import numpy as np
import pytest

import loopax
from loopax import optimizers
from loopax.src.optimizers.muon import newton_schulz5

keras = pytest.importorskip("keras")
if keras.backend.backend() != "jax":
    pytest.skip("needs Keras on JAX", allow_module_level=True)


def test_muon_chooses_adamw_like_keras():
    opt = optimizers.Muon(exclude_layers=["^out"])
    make = lambda name, shape: loopax.Variable(np.zeros(shape, "float32"), name=name)
    assert [opt._should_use_adamw(make(n, s)) for n, s in [
        ("kernel", (3, 4)), ("bias", (4,)), ("conv", (3, 3, 2, 2)), ("Embedding_w", (3, 4)),
        ("out_kernel", (3, 4))]] == [False, True, True, True, True]
    assert not optimizers.Muon(exclude_embeddings=False)._should_use_adamw(
        make("embeddings", (3, 4)))


@pytest.mark.parametrize("name,kwargs", [
    ("Ftrl", dict(learning_rate=0.2, l1_regularization_strength=0.01, beta=0.5)),
    ("Lamb", dict(beta_1=0.7, epsilon=1e-3)),
    ("Muon", dict(exclude_layers=["out"], ns_steps=4, rms_rate=None, nesterov=False)),
], ids=["ftrl", "lamb", "muon"])
def test_config_is_keras_config_and_round_trips(name, kwargs):
    ours = getattr(optimizers, name)(name="opt", **kwargs)
    config = ours.get_config()
    assert config == getattr(keras.optimizers, name)(name="opt", **kwargs).get_config()
    restored = optimizers.deserialize(optimizers.serialize(ours))
    assert type(restored) is type(ours) and restored.get_config() == config


@pytest.mark.parametrize("name,cls", [("ftrl", optimizers.Ftrl), ("muon", optimizers.Muon),
                                      ("Lamb", optimizers.Lamb)])
def test_get_by_name(name, cls):
    assert type(optimizers.get(name)) is cls
    if name != "Lamb":  # (Keras's `get` does not know "lamb"; loopax's does)
        assert type(keras.optimizers.get(name)).__name__ == cls.__name__


@pytest.mark.parametrize("kwargs,match", [
    (dict(initial_accumulator_value=-0.1), "Ftrl: `initial_accumulator_value` must be >= 0"),
    (dict(l1_regularization_strength=-1.0), "`l1_regularization_strength` must be >= 0"),
    (dict(l2_regularization_strength=-1.0), "`l2_regularization_strength` must be >= 0"),
    (dict(l2_shrinkage_regularization_strength=-1.0), "`l2_shrinkage_regularization"),
    (dict(learning_rate_power=0.5), "`learning_rate_power` must be <= 0"),
], ids=["accumulator", "l1", "l2", "shrinkage", "power"])
def test_ftrl_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        optimizers.Ftrl(**kwargs)


def test_muon_rejects_bad_arguments():
    with pytest.raises(ValueError, match="Muon: `ns_steps` must be an int >= 0"):
        optimizers.Muon(ns_steps=2.5)
    with pytest.raises(TypeError, match=r"`exclude_layers` must be a list.*\['dense'\]"):
        optimizers.Muon(exclude_layers="dense")


def test_newton_schulz_orthogonalises():
    x = np.random.default_rng(1).normal(size=(8, 5)).astype("float32")
    singular = np.linalg.svd(np.asarray(newton_schulz5(x, steps=10)), compute_uv=False)
    # Muon's coefficients trade exactness for speed: the singular values
    # land in a band around 1 (about [0.7, 1.2]), not on 1.
    assert singular.min() > 0.6 and singular.max() < 1.3
    assert newton_schulz5(x, steps=5).shape == (8, 5)


def _fit(module, optimizer):
    """Final weights after 2 epochs of `fit` (4 batches each, no shuffling)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype("float32")
    y = rng.normal(size=(32, 2)).astype("float32")
    # Built with zero weights, then given random ones: the random
    # initializers would compile their kernels per shape for nothing.
    add_weight = module.Layer.add_weight

    def zeros_weight(self, *args, **kwargs):
        weight = inspect.signature(add_weight).bind(self, *args, **kwargs)
        # add_weight takes (shape, initializer, dtype) as `*args` too (Keras 3): name them
        positional = weight.arguments.pop("args", ())
        weight.arguments.update(zip(("shape", "initializer", "dtype"), positional))
        weight.arguments["initializer"] = "zeros"
        return add_weight(*weight.args, **weight.kwargs)

    with mock.patch.object(module.Layer, "add_weight", zeros_weight):
        model = module.Sequential([
            module.Input((3,)), module.layers.Dense(4, activation="tanh", name="hidden"),
            module.layers.Dense(2, name="out")])
    model.set_weights([rng.normal(size=w.shape).astype("float32")
                       for w in model.get_weights()])
    model.compile(optimizer=optimizer, loss="mse")
    history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    return model.get_weights(), history.history["loss"]


@pytest.mark.parametrize("name,kwargs", [
    ("Ftrl", dict(learning_rate=0.5, l1_regularization_strength=0.01)),
    ("Lamb", dict(learning_rate=0.05)),
    ("Muon", dict(learning_rate=0.05, exclude_layers=["out"])),
], ids=["ftrl", "lamb", "muon"])
def test_fit_matches_keras(name, kwargs):
    expected, keras_loss = _fit(keras, getattr(keras.optimizers, name)(**kwargs))
    actual, loss = _fit(loopax, getattr(optimizers, name)(**kwargs))
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(loss, keras_loss, rtol=1e-5)
    assert loss[1] < loss[0]
