"""ScheduleFreeAdamW, OptimizerMap and MultiOptimizer against Keras 3.15 itself:
the same variables and gradients (or the same model, weights and data in
fit()) give the same values, slot variables, configs and lookups."""



import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")
if keras.backend.backend() != "jax":
    pytest.skip("needs Keras on JAX", allow_module_level=True)

SHAPES = {"bias": (5,), "kernel": (4, 3)}
STEPS = 20


def _train(module, kwargs, exclude_names=None):
    """Final variable values and the optimizer after 20 eager steps."""
    rng = np.random.default_rng(0)
    variables = [module.Variable(rng.normal(size=s).astype("float32"), name=k)
                 for k, s in SHAPES.items()]
    grads = [[rng.normal(size=s).astype("float32") for s in SHAPES.values()]
             for _ in range(STEPS)]
    optimizer = module.optimizers.ScheduleFreeAdamW(name="opt", **kwargs)
    if exclude_names:
        optimizer.exclude_from_weight_decay(var_names=exclude_names)
    for g in grads:
        optimizer.apply_gradients(zip(g, variables))
    return [np.asarray(v.value) for v in variables], optimizer


SCHEDULE_FREE_CASES = {
    "defaults": ({}, None),
    "warmup-decay-clipnorm": (dict(learning_rate=0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3,
                                   warmup_steps=7, weight_decay=0.1, clipnorm=1.0), ["bias"]),
    "beta1-one": (dict(learning_rate=0.01, beta_1=1.0), None),
}


@pytest.mark.parametrize("kwargs,exclude", SCHEDULE_FREE_CASES.values(),
                         ids=SCHEDULE_FREE_CASES.keys())
def test_schedule_free_adamw_twenty_steps_match_keras(kwargs, exclude):
    expected, keras_opt = _train(keras, kwargs, exclude)
    actual, ours = _train(loopax, kwargs, exclude)
    for key, a, e in zip(SHAPES, actual, expected):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6, err_msg=key)
    assert sorted(v.path for v in ours.variables) == sorted(v.path for v in keras_opt.variables)
    for k_var in keras_opt.variables:
        ours_var = next(v for v in ours.variables if v.path == k_var.path)
        np.testing.assert_allclose(ours_var.numpy(), np.asarray(k_var.value),
                                   rtol=2e-5, atol=2e-6, err_msg=k_var.path)


def test_schedule_free_adamw_config_is_keras_config_and_round_trips():
    kwargs = dict(learning_rate=0.01, beta_1=0.8, warmup_steps=3, weight_decay=0.02)
    ours = loopax.optimizers.ScheduleFreeAdamW(name="sf", **kwargs).get_config()
    theirs = keras.optimizers.ScheduleFreeAdamW(name="sf", **kwargs).get_config()
    for key in ("learning_rate", "beta_1", "beta_2", "epsilon", "warmup_steps",
                "weight_decay", "name"):
        assert ours[key] == pytest.approx(theirs[key]) if isinstance(theirs[key], float) \
            else ours[key] == theirs[key], key
    again = loopax.optimizers.deserialize(loopax.optimizers.serialize(
        loopax.optimizers.ScheduleFreeAdamW(**kwargs)))
    assert isinstance(again, loopax.optimizers.ScheduleFreeAdamW)
    assert again.warmup_steps == 3 and again.beta_1 == 0.8


def test_schedule_free_adamw_refuses_beta_1_zero():
    with pytest.raises(ValueError, match="beta_1"):
        loopax.optimizers.ScheduleFreeAdamW(beta_1=0.0)


# ---- OptimizerMap / MultiOptimizer ----------------------------------------------

def test_optimizer_map_lookup_matches_keras():
    def lookups(lib):
        adam, sgd, rmsprop = (lib.optimizers.Adam(name="adam"), lib.optimizers.SGD(name="sgd"),
                              lib.optimizers.RMSprop(name="rmsprop"))
        mapping = lib.optimizers.OptimizerMap(default_optimizer=rmsprop)
        mapping["encoder/layer_0/dense"] = adam
        mapping["encoder/.*"] = sgd
        mapping["decoder"] = adam
        keys = ["decoder", "encoder/layer_0/dense", "encoder/layer_0/attention/query",
                "decoder/layer_0/dense"]
        return [mapping[key].name for key in keys]

    assert lookups(loopax) == lookups(keras) == ["adam", "adam", "sgd", "rmsprop"]


def test_optimizer_map_errors_like_keras():
    for lib, error in ((loopax, ValueError), (keras, ValueError)):
        mapping = lib.optimizers.OptimizerMap(lib.optimizers.SGD(),
                                              {"a.*": lib.optimizers.Adam(),
                                               ".*b": lib.optimizers.Adam()})
        with pytest.raises(error):
            mapping["ab"]   # two patterns match
        with pytest.raises(ValueError):
            mapping["a.*"] = lib.optimizers.SGD()   # already mapped
    with pytest.raises(ValueError, match="LossScaleOptimizer"):
        loopax.optimizers.OptimizerMap(loopax.optimizers.SGD())["x"] = \
            loopax.optimizers.LossScaleOptimizer(loopax.optimizers.SGD())


X = np.random.default_rng(1).normal(size=(32, 4)).astype("float32")
Y = np.random.default_rng(2).normal(size=(32, 2)).astype("float32")


def encoder_head_model(lib):
    inputs = lib.Input((4,))
    hidden = lib.layers.Dense(6, activation="tanh", name="encoder")(inputs)
    return lib.Model(inputs, lib.layers.Dense(2, name="head")(hidden))


def by_map(lib):
    return lib.optimizers.MultiOptimizer(lib.optimizers.OptimizerMap(
        lib.optimizers.SGD(0.1), {"encoder/.*": lib.optimizers.Adam(0.01)}))


def by_callable(lib):
    adam, sgd = lib.optimizers.Adam(0.01), lib.optimizers.SGD(0.1, momentum=0.5)
    return lib.optimizers.MultiOptimizer(
        lambda variable: adam if variable.path.startswith("head") else sgd)


def fit_model(lib, make_optimizer, weights):
    model = encoder_head_model(lib)
    model.set_weights(weights)
    model.compile(make_optimizer(lib), "mse")
    history = model.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    return model, history.history["loss"]


@pytest.mark.parametrize("make_optimizer", [by_map, by_callable], ids=["optimizer-map",
                                                                        "callable"])
def test_multi_optimizer_fit_matches_keras(make_optimizer):
    rng = np.random.default_rng(3)
    weights = [rng.normal(size=w.shape).astype("float32")
               for w in encoder_head_model(loopax).get_weights()]
    ours, our_loss = fit_model(loopax, make_optimizer, weights)
    theirs, their_loss = fit_model(keras, make_optimizer, weights)
    np.testing.assert_allclose(our_loss, their_loss, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert int(ours.optimizer.iterations.value) == int(theirs.optimizer.iterations.value) == 8
    assert [int(o.iterations.value) for o in ours.optimizer.optimizers] == \
        [int(o.iterations.value) for o in theirs.optimizer.optimizers]
    # Keras's own learning rate, which no update reads, is the one variable loopax lacks
    # (and each inner optimizer lists its slots by kind, where Keras interleaves them).
    their_vars = {v.path: v for v in theirs.optimizer.variables
                  if v.path != "multi_optimizer/learning_rate"}
    assert sorted(v.path for v in ours.optimizer.variables) == sorted(their_vars)
    for v in ours.optimizer.variables:
        np.testing.assert_allclose(np.asarray(v.value), np.asarray(their_vars[v.path].value),
                                   rtol=1e-5, atol=1e-6, err_msg=v.path)


def test_multi_optimizer_has_no_learning_rate_as_keras():
    for lib in (loopax, keras):
        optimizer = by_map(lib)
        with pytest.raises(AttributeError, match="[Ll]earning rate"):
            optimizer.learning_rate


def test_multi_optimizer_refuses_a_loss_scale_optimizer_from_its_callable():
    optimizer = loopax.optimizers.MultiOptimizer(
        lambda v: loopax.optimizers.LossScaleOptimizer(loopax.optimizers.SGD()))
    with pytest.raises(ValueError, match="cannot run inside a MultiOptimizer"):
        optimizer.build(encoder_head_model(loopax).trainable_variables)


def test_multi_optimizer_state_saves_and_training_resumes(tmp_path):
    model = encoder_head_model(loopax)
    model.compile(by_map(loopax), "mse")
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    path = str(tmp_path / "multi.keras")
    model.save(path)
    loaded = loopax.models.load_model(path)
    assert isinstance(loaded.optimizer, loopax.optimizers.MultiOptimizer)
    for a, b in zip(model.optimizer.variables, loaded.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(a.value), np.asarray(b.value))
    for m in (model, loaded):
        m.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
