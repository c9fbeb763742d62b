"""erfc, segment_min/prod, cdist, extract_sequences (math), pinv and
matrix_rank (linalg), threshold, sparse_sigmoid, sparsemax, depth_to_space,
space_to_depth and psnr (nn), against keras.ops (Keras 3 on JAX)."""



import jax
import numpy as np
import pytest

import loopax
from loopax import ops

keras = pytest.importorskip("keras")

rng = np.random.default_rng(4)
X = rng.normal(size=(3, 4, 5)).astype("float32")
DATA = rng.normal(size=(5, 3)).astype("float32")
IDS = np.array([0, 0, 2, 2, 1], "int32")
IMAGES = rng.normal(size=(2, 4, 6, 8)).astype("float32")


def check(actual, expected, tol=1e-5):
    actual, expected = jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


CASES = {
    "erfc": ("erfc", (X * 3,), {}),
    "erfc-int": ("erfc", (np.array([0, 1, 2], "int32"),), {}),
    "segment_min": ("segment_min", (DATA, IDS), dict(num_segments=4)),
    "segment_prod": ("segment_prod", (DATA, IDS), dict(num_segments=4)),
    "segment_min-sorted": ("segment_min", (DATA, np.sort(IDS)), dict(num_segments=3, sorted=True)),
    "cdist": ("cdist", (X, rng.normal(size=(3, 6, 5)).astype("float32")), {}),
    "cdist-2d": ("cdist", (X[0], X[1]), {}),
    "extract_sequences": ("extract_sequences", (X, 3, 1), {}),
    "extract_sequences-stride": ("extract_sequences",
                                 (rng.normal(size=(2, 20)).astype("float32"), 5, 3), {}),
    "pinv": ("pinv", (X,), {}),
    "pinv-rcond": ("pinv", (X[0],), dict(rcond=0.5)),
    "matrix_rank-singular": ("matrix_rank", (np.array([[1.0, 2.0], [2.0, 4.0]], "float32"),), {}),
    "matrix_rank-batch": ("matrix_rank", (X,), {}),
    "matrix_rank-tol": ("matrix_rank", (X,), dict(tol=1.0)),
    "threshold": ("threshold", (X, 0.1, -2.0), {}),
    "sparse_sigmoid": ("sparse_sigmoid", (X * 2,), {}),
    "depth_to_space": ("depth_to_space", (IMAGES, 2), {}),
    "depth_to_space-channels-first": ("depth_to_space", (IMAGES.transpose(0, 3, 1, 2), 2),
                                      dict(data_format="channels_first")),
    "space_to_depth": ("space_to_depth", (IMAGES, 2), {}),
    "space_to_depth-channels-first": ("space_to_depth", (IMAGES.transpose(0, 3, 1, 2), 2),
                                      dict(data_format="channels_first")),
    "psnr": ("psnr", (X, X + 0.1 * rng.normal(size=X.shape).astype("float32"), 1.0), {}),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_matches_keras(case):
    name, args, kwargs = CASES[case]
    check(getattr(ops, name)(*args, **kwargs), getattr(keras.ops, name)(*args, **kwargs))


def reference_sparsemax(z):
    """Martins & Astudillo (2016), Algorithm 1, one vector at a time in float64."""
    z = np.asarray(z, "float64")
    ranked = np.sort(z)[::-1]
    k = np.arange(1, z.size + 1)
    support = 1 + k * ranked > np.cumsum(ranked)
    tau = (np.cumsum(ranked)[support][-1] - 1) / k[support][-1]
    return np.maximum(z - tau, 0)


@pytest.mark.parametrize("axis", [-1, 1])
def test_sparsemax_is_the_simplex_projection(axis):
    """Not compared with Keras: Keras 3.15.1's JAX sparsemax sums the running
    sums over the support for its threshold, so its outputs do not sum to 1."""
    out = np.asarray(ops.sparsemax(X * 2, axis=axis))
    expected = np.apply_along_axis(reference_sparsemax, axis, X * 2)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.sum(axis=axis), 1.0, rtol=1e-5)
    assert (out == 0).any()


def test_depth_to_space_inverts_space_to_depth():
    for data_format, images in [("channels_last", IMAGES),
                                ("channels_first", IMAGES.transpose(0, 3, 1, 2))]:
        packed = ops.space_to_depth(images, 2, data_format=data_format)
        check(ops.depth_to_space(packed, 2, data_format=data_format), images)


def test_under_tape_and_jit():
    """loopax's ops eagerly under a GradientTape, and inside jax.jit; Keras's side is
    compiled once (jax.grad of it run eagerly compiles every op of pinv's and
    cdist's backward pass one by one: seconds)."""
    x = loopax.Variable(X[0])
    with loopax.GradientTape() as tape:
        loss = (ops.sum(ops.cdist(x, X[1])) + ops.sum(ops.pinv(x)) + ops.sum(ops.erfc(x))
                + ops.sum(ops.sparse_sigmoid(x)) + ops.psnr(x, X[1], 2.0))
    expected = jax.jit(jax.grad(
        lambda v: keras.ops.sum(keras.ops.cdist(v, X[1])) + keras.ops.sum(keras.ops.pinv(v))
        + keras.ops.sum(keras.ops.erfc(v)) + keras.ops.sum(keras.ops.sparse_sigmoid(v))
        + keras.ops.psnr(v, X[1], 2.0)))(X[0])
    check(tape.gradient(loss, x), expected, tol=1e-4)
    jitted = jax.jit(lambda d, i: (ops.segment_min(d, i, num_segments=3),
                                   ops.extract_sequences(d.T, 2, 1),
                                   ops.space_to_depth(IMAGES, 2)))
    keras_jitted = jax.jit(lambda d, i: (keras.ops.segment_min(d, i, num_segments=3),
                                         keras.ops.extract_sequences(d.T, 2, 1),
                                         keras.ops.space_to_depth(IMAGES, 2)))
    check(jitted(DATA, IDS), keras_jitted(DATA, IDS))


def test_bad_inputs():
    with pytest.raises(ValueError, match="cdist: `x` and `y` must have rank >= 2"):
        ops.cdist(X[0, 0], X[0])
    with pytest.raises(ValueError, match="same number of features"):
        ops.cdist(X[0], X[0].T)
    with pytest.raises(ValueError, match="extract_sequences: the last axis .* shorter"):
        ops.extract_sequences(X, 9, 1)
    with pytest.raises(ValueError, match="pinv: `x` must have rank >= 2"):
        ops.pinv(X[0, 0])
    with pytest.raises(ValueError, match="matrix_rank: `x` must have rank >= 2"):
        ops.matrix_rank(X[0, 0])
    with pytest.raises(ValueError, match=r"depth_to_space: channels \(8\) must be a multiple"):
        ops.depth_to_space(IMAGES, 3)
    with pytest.raises(ValueError, match=r"space_to_depth: height and width \(4, 6\)"):
        ops.space_to_depth(IMAGES, 4)
    with pytest.raises(ValueError, match="space_to_depth: `x` must be 4-D"):
        ops.space_to_depth(X, 2)
    with pytest.raises(ValueError, match="data_format must be"):
        ops.depth_to_space(IMAGES, 2, data_format="NHWC")
    with pytest.raises(ValueError, match="psnr: `x1` .* must have the same shape"):
        ops.psnr(X, X[0], 1.0)
    with pytest.raises(ValueError, match="segment ops: inside jax.jit `num_segments`"):
        jax.jit(ops.segment_prod)(DATA, IDS)
