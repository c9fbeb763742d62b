"""Keras 3 (on JAX) as the reference for the parity suite.

`import keras_reference` skips the importing test module with one line when
Keras is not installed. Helpers build a Keras layer and a loopax layer from
the same arguments, copy Keras's weights into loopax (matched by order and
name), and run both through `stateless_call` so outputs, updated
non-trainable values and `jax.grad` gradients can be compared.
"""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

keras = pytest.importorskip(
    "keras", reason="keras is not installed: the Keras parity suite is skipped "
                    "(pip install 'loopax[test]' to run it)")
if keras.backend.backend() != "jax":
    pytest.skip(f"Keras parity suite needs KERAS_BACKEND=jax; Keras was already imported "
                f"with the {keras.backend.backend()!r} backend.", allow_module_level=True)

import loopax  # noqa: E402


def build_pair(name, kwargs, args, call_kwargs=None, seed=0):
    """`(keras_layer, loopax_layer)` of class `name`, both built by a call on
    `args`, holding the same random weights (Keras's, copied into loopax).

    Initializers are set to "zeros" for the build and the weights then drawn
    with NumPy: compiling JAX's random kernels for every weight shape would
    dominate the suite's time, and initializers are not what is compared.
    """
    call_kwargs = call_kwargs or {}
    keras_class = getattr(keras.layers, name)
    init_args = {p: "zeros" for p in inspect.signature(keras_class).parameters
                 if p.endswith("_initializer")}
    kwargs = {**init_args, **kwargs}
    keras_layer = keras_class(**kwargs)
    loopax_layer = getattr(loopax.layers, name)(**kwargs)
    # Built by a call on symbolic inputs: shapes only, nothing compiled.
    keras_layer(*symbolic(args, keras.KerasTensor), **call_kwargs)
    loopax_layer(*symbolic(args, lambda shape, dtype: loopax.Input(
        batch_shape=shape, dtype=dtype)), **call_kwargs)
    rng = np.random.default_rng(seed)
    for w in keras_layer.weights:
        if not is_float(np.zeros((), str(w.dtype))):
            continue  # e.g. Normalization's sample count
        value = rng.standard_normal(tuple(w.shape)).astype("float32") * 0.5
        if "variance" in w.name:  # BatchNormalization's moving variance: > 0
            value = np.abs(value) + 0.5
        w.assign(value)
    copy_weights(keras_layer, loopax_layer)
    return keras_layer, loopax_layer


def symbolic(args, make):
    """`args` with every array replaced by `make(shape, dtype)`."""
    return jax.tree_util.tree_map(lambda x: make(tuple(np.shape(x)), str(np.asarray(x).dtype)),
                                  args)


def copy_weights(keras_layer, loopax_layer):
    """Assigns Keras's weights to loopax's, checking names and shapes agree."""
    source, target = keras_layer.weights, loopax_layer.weights
    describe = lambda ws: [(w.path, tuple(w.shape)) for w in ws]
    assert len(source) == len(target), (describe(source), describe(target))
    for k, lx in zip(source, target):
        assert k.name == lx.name and tuple(k.shape) == tuple(lx.shape), (
            f"weight mismatch: keras {k.path} {tuple(k.shape)} vs loopax {lx.path} "
            f"{tuple(lx.shape)}")
    loopax_layer.set_weights([np.asarray(w) for w in keras_layer.get_weights()])


def _values(variables):
    return [jnp.asarray(v.value) for v in variables]


def is_float(x):
    return jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating)


def _objective(layer, args, call_kwargs):
    """`f(trainable, float leaves of args) -> (sum(output · c), (output, new
    non-trainable values))` through `layer.stateless_call` (c: fixed random,
    from the output's shape).

    `training` is passed only to layers whose `call` takes it (Keras's
    `stateless_call` forwards every keyword to `call`)."""
    if "training" not in inspect.signature(layer.call).parameters:
        call_kwargs = {k: v for k, v in call_kwargs.items() if k != "training"}
    non_trainable = _values(layer.non_trainable_variables)
    leaves, treedef = jax.tree_util.tree_flatten(args)
    float_positions = [i for i, x in enumerate(leaves) if is_float(x)]

    def objective(trainable, float_leaves):
        full = list(leaves)
        for i, x in zip(float_positions, float_leaves):
            full[i] = x
        out, new = layer.stateless_call(trainable, non_trainable,
                                        *jax.tree_util.tree_unflatten(treedef, full),
                                        **call_kwargs)
        # RNG seed states are compared by the noise tests, not by value.
        new = [v for v, var in zip(new, layer.non_trainable_variables)
               if "seed_generator" not in var.name]
        first = jax.tree_util.tree_leaves(out)[0]
        cotangent = np.random.default_rng(1).standard_normal(first.shape).astype("float32")
        return jnp.sum(first * cotangent), (out, new)

    return objective, [jnp.asarray(leaves[i]) for i in float_positions]


def evaluate_pair(pair, args, call_kwargs):
    """For each layer of `pair`: `(output, new non-trainable values, grads)`,
    grads being those of `sum(output · c)` w.r.t. (trainable weights, float
    inputs). Both layers run in one `jax.jit` (one compile per case)."""
    objectives, float_leaves = zip(*(_objective(layer, args, call_kwargs) for layer in pair))

    def both(trainables, float_leaves):
        results = []
        for objective, trainable, leaves in zip(objectives, trainables, float_leaves):
            (_, (out, new)), grads = jax.value_and_grad(
                objective, argnums=(0, 1), has_aux=True)(trainable, leaves)
            results.append((out, new, grads))
        return results

    trainables = [_values(layer.trainable_variables) for layer in pair]
    return jax.jit(both)(trainables, list(float_leaves))


def assert_close(a, b, rtol, atol, what):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb), f"{what}: {len(la)} vs {len(lb)} arrays"
    for i, (x, y) in enumerate(zip(la, lb)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol,
                                   err_msg=f"{what} [{i}]")
