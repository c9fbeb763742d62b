"""Shared checks for layer tests: stateless call vs stateful call, and
gradients through `stateless_call` vs a hand-written JAX reference."""

import jax
import jax.numpy as jnp
import numpy as np


def values(variables):
    return [jnp.asarray(v.value) for v in variables]


def check_stateless_matches_stateful(layer, *args, rtol=1e-5, atol=1e-6, **kwargs):
    """Calls the layer statelessly then statefully on the same state and
    checks outputs and the new non-trainable values agree. Returns the output."""
    if not layer.built:
        first = args[0]
        layer.build([np.shape(x) for x in first] if isinstance(first, list) else np.shape(first))
    trainable, non_trainable = values(layer.trainable_variables), values(
        layer.non_trainable_variables)
    out, new_non_trainable = layer.stateless_call(trainable, non_trainable, *args, **kwargs)
    # The stateless call changed none of the layer's own variables.
    for var, before in zip(layer.non_trainable_variables, non_trainable):
        np.testing.assert_array_equal(np.asarray(var.value), np.asarray(before))
    expected = layer(*args, **kwargs)
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol),
        out, expected)
    for var, new in zip(layer.non_trainable_variables, new_non_trainable):
        np.testing.assert_allclose(np.asarray(var.value), np.asarray(new), rtol=rtol, atol=atol)
    return expected


def grads_through_stateless_call(layer, x, cotangent, argnums=(0, 1), **kwargs):
    """d/d(trainable values, x) of sum(layer(x) * cotangent), via jax.grad
    over `stateless_call` (argnums=0: the trainable values only), jitted:
    one compile is cheaper than many eager ones."""
    non_trainable = values(layer.non_trainable_variables)

    def objective(trainable, x):
        out, _ = layer.stateless_call(trainable, non_trainable, x, **kwargs)
        return jnp.sum(out * cotangent)

    return jax.jit(jax.grad(objective, argnums=argnums))(values(layer.trainable_variables), x)


def reference_grads(fn, params, x, cotangent):
    """d/d(params, x) of sum(fn(params, x) * cotangent) for a reference `fn`."""
    objective = lambda p, x: jnp.sum(fn(p, x) * cotangent)
    return jax.jit(jax.grad(objective, argnums=(0, 1)))(params, x)


def assert_trees_close(a, b, rtol=1e-5, atol=1e-5):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)
