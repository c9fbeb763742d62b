"""keras.ops names loopax lacked until issue #22 (cholesky_inverse, eig,
lu_factor, jvp, polar, fold/unfold, vectorize, view, view_as_complex/real,
custom_gradient, numpy.slogdet): results and gradients equal to Keras 3.15.1's."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from keras_reference import keras

import loopax

rng = np.random.default_rng(0)
M = rng.normal(size=(2, 4, 4)).astype("float32")
SPD = (M @ np.swapaxes(M, -1, -2) + 4 * np.eye(4)).astype("float32")
LOWER = np.linalg.cholesky(SPD).astype("float32")
UPPER = np.swapaxes(LOWER, -1, -2).copy()
IMAGES = rng.normal(size=(2, 3, 7, 8)).astype("float32")
UNFOLD_ARGS = [({"kernel_size": 3}, (7, 8)),
               ({"kernel_size": (2, 3), "stride": 2, "padding": 1}, (7, 8)),
               ({"kernel_size": 2, "dilation": (2, 1), "stride": (1, 2)}, (7, 8))]

CASES = {
    # Keras 3.15.1 inverts single matrices only (loopax: batches too, tested below).
    "cholesky_inverse-lower": ("cholesky_inverse", (LOWER[0],), {}),
    "cholesky_inverse-upper": ("cholesky_inverse", (UPPER[0],), {"upper": True}),
    "lu_factor": ("lu_factor", (M[0],), {}),
    "lu_factor-batched": ("lu_factor", (M,), {}),
    "slogdet": ("slogdet", (M,), {}),
    "polar": ("polar", (np.abs(M), M * 2), {}),
    "view-int32-as-float32": ("view", (np.arange(12, dtype="int32").reshape(3, 4), "float32"),
                              {}),
    "view-float32-as-uint16": ("view", (M, "uint16"), {}),
    "view-none": ("view", (M,), {}),
    "view_as_complex": ("view_as_complex", (M[..., :2],), {}),
    "view_as_real": ("view_as_real", (M[0] + 1j * M[1],), {}),
}
for i, (kwargs, size) in enumerate(UNFOLD_ARGS):
    CASES[f"unfold-{i}"] = ("unfold", (IMAGES,), kwargs)
    blocks = np.asarray(keras.ops.unfold(IMAGES, **kwargs))
    CASES[f"fold-{i}"] = ("fold", (blocks, size), kwargs)


def as_list(result):
    return [np.asarray(r) for r in result] if isinstance(result, (tuple, list)) \
        else [np.asarray(result)]


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_op_matches_keras(case):
    name, args, kwargs = CASES[case]
    ours = as_list(getattr(loopax.ops, name)(*args, **kwargs))
    theirs = as_list(getattr(keras.ops, name)(*args, **kwargs))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["cholesky_inverse-lower", "cholesky_inverse-upper", "unfold-1",
                                  "fold-2", "view_as_complex"])
def test_gradient_matches_keras(case):
    name, (x, *rest), kwargs = CASES[case]

    def gradient(module):
        def loss(x):
            y = getattr(module.ops, name)(x, *rest, **kwargs)
            return jnp.real(y * jnp.cos(jnp.arange(y.size).reshape(y.shape))).sum()
        return jax.grad(loss)(x)

    np.testing.assert_allclose(gradient(loopax), gradient(keras), rtol=1e-4, atol=1e-4)


def test_fold_rebuilds_non_overlapping_blocks_and_is_the_adjoint_of_unfold():
    blocks = loopax.ops.unfold(IMAGES[..., :6], 2, stride=2)
    np.testing.assert_allclose(loopax.ops.fold(blocks, (7, 6), 2, stride=2)[:, :, :6],
                               IMAGES[:, :, :6, :6])
    cotangent = rng.normal(size=IMAGES.shape).astype("float32")
    inner = (np.asarray(loopax.ops.unfold(IMAGES, 3, padding=1)) *
             np.asarray(loopax.ops.unfold(cotangent, 3, padding=1))).sum()
    folded = np.asarray(loopax.ops.fold(loopax.ops.unfold(cotangent, 3, padding=1), (7, 8), 3,
                                        padding=1))
    np.testing.assert_allclose((IMAGES * folded).sum(), inner, rtol=1e-4)


def test_cholesky_inverse_is_the_inverse():
    np.testing.assert_allclose(loopax.ops.cholesky_inverse(LOWER) @ SPD,
                               np.broadcast_to(np.eye(4), SPD.shape), atol=1e-4)


def test_eig_matches_keras_and_diagonalizes():
    values, vectors = loopax.ops.eig(M[0])
    keras_values, _ = keras.ops.eig(M[0])
    np.testing.assert_allclose(np.sort_complex(np.asarray(values)),
                               np.sort_complex(np.asarray(keras_values)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(M[0] @ vectors, vectors * values, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("has_aux", [False, True], ids=["plain", "has_aux"])
def test_jvp_matches_keras(has_aux):
    def fun(x, y):
        out = jnp.sin(x) * y
        return (out, x.sum()) if has_aux else out

    primals, tangents = (M[0], M[1]), (np.ones_like(M[0]), M[0])
    for a, b in zip(loopax.ops.jvp(fun, primals, tangents, has_aux=has_aux),
                    keras.ops.jvp(fun, primals, tangents, has_aux=has_aux)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_vectorize_matches_keras():
    def inner(a, b):
        return (a * b).sum()

    for module in (loopax, keras):
        out = module.ops.vectorize(inner, signature="(n),(n)->()")(M, M[0, 0])
        np.testing.assert_allclose(out, (M * M[0, 0]).sum(-1), rtol=1e-5)
    scaled = loopax.ops.vectorize(lambda x, k: x * k, excluded={1})(M[0, 0], 3.0)
    np.testing.assert_allclose(scaled, M[0, 0] * 3.0)


def test_custom_gradient_from_keras_docs_runs_in_loopax():
    def make(module):
        @module.ops.custom_gradient
        def log1pexp(x):
            e = module.ops.exp(x)

            def grad(*args, upstream=None):
                if upstream is None:
                    (upstream,) = args
                return module.ops.multiply(upstream, 1.0 - 1.0 / module.ops.add(1, e))
            return module.ops.log(1 + e), grad
        return log1pexp

    x = np.array([0.0, 1.0, 100.0], "float32")
    grads = [jax.grad(lambda v, f=make(m): f(v).sum())(x) for m in (loopax, keras)]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
    assert np.isfinite(grads[0]).all()


@pytest.mark.parametrize("call,match", [
    (lambda: loopax.ops.unfold(IMAGES[0], 2), r"\(3, 7, 8\)"),
    (lambda: loopax.ops.fold(np.zeros((2, 12, 5)), (7, 8), 2), "do not match"),
    (lambda: loopax.ops.view_as_complex(M), "size 2"),
    (lambda: loopax.ops.view_as_real(M), "complex"),
], ids=["unfold-rank", "fold-blocks", "complex-last-axis", "real-of-real"])
def test_bad_input_names_the_problem(call, match):
    with pytest.raises(ValueError, match=match):
        call()
