"""Ftrl, Lamb and Muon against Keras 3 itself: the same variables and 20
steps of the same gradients give the same values, variables and configs."""

import jax
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")
if keras.backend.backend() != "jax":
    pytest.skip("needs Keras on JAX", allow_module_level=True)

# A 1-D bias, a tall and a wide 2-D kernel (Muon's Newton-Schulz transposes
# the tall one), a 2-D "embedding" (AdamW in Muon by default) and a 4-D conv
# kernel (always AdamW in Muon).
SHAPES = {"bias": (5,), "kernel": (4, 3), "wide": (3, 6), "token_embedding": (6, 2),
          "conv_kernel": (3, 3, 2, 4)}
STEPS = 20


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    init = {k: rng.normal(size=s).astype("float32") for k, s in SHAPES.items()}
    grads = [{k: rng.normal(size=s).astype("float32") for k, s in SHAPES.items()}
             for _ in range(STEPS)]
    return init, grads


def _optimizer(module, name, kwargs, exclude_names):
    optimizer = getattr(module.optimizers, name)(name="opt", **kwargs)
    if exclude_names:
        optimizer.exclude_from_weight_decay(var_names=exclude_names)
    return optimizer


def _train(name, kwargs, exclude_names=None):
    """loopax: final variable values and the optimizer after 20 eager
    `apply_gradients` calls."""
    init, grads = _problem()
    variables = [loopax.Variable(init[k], name=k) for k in SHAPES]
    optimizer = _optimizer(loopax, name, kwargs, exclude_names)
    for g in grads:
        optimizer.apply_gradients(zip([g[k] for k in SHAPES], variables))
    return [v.numpy() for v in variables], optimizer


def _train_keras(name, kwargs, exclude_names=None):
    """The same 20 steps in Keras, through its `stateless_apply` compiled once (run
    eagerly, Keras compiles each of its ops on first use: seconds per optimizer);
    the results are assigned back so the optimizer's slots can be read."""
    init, grads = _problem()
    variables = [keras.Variable(init[k], name=k) for k in SHAPES]
    optimizer = _optimizer(keras, name, kwargs, exclude_names)
    optimizer.build(variables)
    step = jax.jit(optimizer.stateless_apply)
    slots, values = [v.value for v in optimizer.variables], [v.value for v in variables]
    for g in grads:
        values, slots = step(slots, [g[k] for k in SHAPES], values)
    for v, value in zip(list(optimizer.variables) + variables, list(slots) + list(values)):
        v.assign(value)
    return [np.asarray(v.value) for v in variables], optimizer


# (optimizer, arguments, names excluded from weight decay). Clipping and
# decay run before the step, as in Keras; large epsilons make epsilon's
# placement visible.
CASES = {
    "ftrl-defaults": ("Ftrl", {}, None),
    "ftrl-all-terms-clipnorm-decay": ("Ftrl", dict(
        learning_rate=0.1, learning_rate_power=-0.7, initial_accumulator_value=0.3,
        l1_regularization_strength=0.05, l2_regularization_strength=0.1,
        l2_shrinkage_regularization_strength=0.02, beta=0.3, clipnorm=1.0,
        weight_decay=0.05), ["bias"]),
    "ftrl-fixed-rate": ("Ftrl", dict(learning_rate=0.05, learning_rate_power=0.0,
                                     initial_accumulator_value=0.0), None),
    "lamb-defaults": ("Lamb", {}, None),
    "lamb-epsilon-global-clipnorm-decay": ("Lamb", dict(
        learning_rate=0.02, beta_1=0.8, beta_2=0.9, epsilon=0.1, global_clipnorm=2.0,
        weight_decay=0.1), ["conv"]),
    "muon-defaults": ("Muon", {}, None),
    "muon-options-clipvalue": ("Muon", dict(
        learning_rate=0.02, nesterov=False, rms_rate=None, exclude_layers=["wide"],
        exclude_embeddings=False, weight_decay=0.1, adam_weight_decay=None,
        adam_lr_ratio=0.5, momentum=0.9, ns_steps=3, adam_beta_1=0.8, epsilon=0.01,
        clipvalue=0.5), ["kernel"]),
    "muon-coefficients-decay": ("Muon", dict(
        learning_rate=0.01, muon_a=2.0, muon_b=-1.5, muon_c=0.5, rms_rate=0.3,
        adam_weight_decay=0.3, weight_decay=None), ["bias"]),
}


@pytest.mark.parametrize("name,kwargs,exclude", CASES.values(), ids=CASES.keys())
def test_twenty_steps_match_keras(name, kwargs, exclude):
    expected, keras_opt = _train_keras(name, kwargs, exclude)
    actual, ours = _train(name, kwargs, exclude)
    for key, a, e in zip(SHAPES, actual, expected):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6, err_msg=key)
    # The same slot variables under Keras's names (loopax lists each kind
    # of slot for all variables in turn; Keras interleaves them).
    assert sorted(v.path for v in ours.variables) == sorted(v.path for v in keras_opt.variables)
    for k_var in keras_opt.variables:
        ours_var = next(v for v in ours.variables if v.path == k_var.path)
        np.testing.assert_allclose(ours_var.numpy(), np.asarray(k_var.value),
                                   rtol=2e-5, atol=2e-6, err_msg=k_var.path)
