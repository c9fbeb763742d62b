"""loopax.ops.nn against hand-written NumPy loops and closed forms."""

import math

import jax
import numpy as np
import pytest

import loopax
from loopax import ops

rng = np.random.default_rng(1)


def check(actual, expected, tol=1e-5):
    assert isinstance(actual, (jax.Array, loopax.Tensor)), type(actual)
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


# --------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------

def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": np_sigmoid,
    "log_sigmoid": lambda x: np.log(np_sigmoid(x)),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "silu": lambda x: x * np_sigmoid(x),
    "swish": lambda x: x * np_sigmoid(x),
    "hard_sigmoid": lambda x: np.clip(x / 6 + 0.5, 0, 1),
    "hard_silu": lambda x: x * np.clip(x / 6 + 0.5, 0, 1),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.2 * x),
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "celu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "tanh_shrink": lambda x: x - np.tanh(x),
    "hard_shrink": lambda x: np.where(np.abs(x) > 0.5, x, 0),
    "soft_shrink": lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.5, 0),
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "softmax": np_softmax,
    "log_softmax": lambda x: np.log(np_softmax(x)),
}


def test_activations_against_closed_forms():
    x = np.linspace(-8, 8, 24).reshape(2, 12).astype("float32")
    got = jax.jit(lambda a: {n: getattr(ops, n)(a) for n in ACTIVATIONS})(x)
    for name, ref in ACTIVATIONS.items():
        check(got[name], ref(x.astype("float64")), tol=1e-5)
    check(ops.relu(loopax.Variable(x)), np.maximum(x, 0))
    check(ops.sigmoid(0.0), 0.5)
    check(ops.gelu(x, approximate=False),
          0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2))), tol=1e-5)
    check(ops.glu(x), x[:, :6] * np_sigmoid(x[:, 6:]))
    check(ops.softmax(x, axis=0), np_softmax(x, axis=0))


def test_one_hot_and_multi_hot():
    check(ops.one_hot(np.array([0, 2, -1]), 3), [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    check(ops.one_hot(np.array([1, 0]), 2, axis=0), [[0, 1], [1, 0]])
    assert ops.one_hot(np.array([1]), 2).dtype == np.float32
    assert ops.one_hot(np.array([1]), 2, dtype="int32").dtype == np.int32
    check(ops.multi_hot(np.array([[0, 2], [1, 1]]), 4), [[1, 0, 1, 0], [0, 1, 0, 0]])
    check(ops.multi_hot(np.array([0, 3]), 4), [1, 0, 0, 1])


# --------------------------------------------------------------------------
# Convolution: references are direct loops
# --------------------------------------------------------------------------

def same_padding(size, k_eff, stride):
    out = -(-size // stride)
    total = max((out - 1) * stride + k_eff - size, 0)
    return out, total // 2, total - total // 2


def np_conv2d(x, w, strides=(1, 1), padding="valid", dilation=(1, 1)):
    """x (N, H, W, C), w (kh, kw, C // groups, F): channels_last, grouped."""
    n, h, wd, c = x.shape
    kh, kw, cg, f = w.shape
    f_per_group = f // (c // cg)  # filters per group
    ekh, ekw = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    if padding == "same":
        oh, top, bottom = same_padding(h, ekh, strides[0])
        ow, left, right = same_padding(wd, ekw, strides[1])
    else:
        oh, top, bottom = (h - ekh) // strides[0] + 1, 0, 0
        ow, left, right = (wd - ekw) // strides[1] + 1, 0, 0
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    out = np.zeros((n, oh, ow, f))
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for o in range(f):
                    g = o // f_per_group
                    patch = xp[b, i * strides[0]: i * strides[0] + ekh: dilation[0],
                               j * strides[1]: j * strides[1] + ekw: dilation[1],
                               g * cg:(g + 1) * cg]
                    out[b, i, j, o] = np.sum(patch * w[..., o])
    return out


CONV_CASES = [
    dict(strides=1, padding="valid", dilation_rate=1),
    dict(strides=2, padding="same", dilation_rate=1),
    dict(strides=1, padding="same", dilation_rate=2),
    dict(strides=(2, 1), padding="valid", dilation_rate=1),
]


@pytest.mark.parametrize("case", CONV_CASES,
                         ids=["valid", "strided-same", "dilated-same", "strided_2x1-valid"])
def test_conv2d_matches_loop(case):
    x = rng.normal(size=(2, 5, 6, 3)).astype("float32")
    w = rng.normal(size=(3, 2, 3, 4)).astype("float32")
    pair = lambda v: (v, v) if isinstance(v, int) else v
    expected = np_conv2d(x, w, pair(case["strides"]), case["padding"], pair(case["dilation_rate"]))
    check(ops.conv(x, loopax.Variable(w), **case), expected, tol=1e-4)


def test_conv_channels_first_1d_grouped():
    x = rng.normal(size=(2, 7, 4)).astype("float32")
    w = rng.normal(size=(3, 2, 6)).astype("float32")  # 2 groups of 2 channels
    expected = np_conv2d(x[:, None], w[None], (1, 2), "same")[:, 0]
    check(ops.conv(x, w, strides=2, padding="same"), expected, tol=1e-4)
    x_cf = np.transpose(x, (0, 2, 1))
    check(ops.conv(x_cf, w, strides=2, padding="same", data_format="channels_first"),
          np.transpose(expected, (0, 2, 1)), tol=1e-4)


def test_conv_3d_shape():
    out = ops.conv(np.ones((1, 4, 4, 4, 2)), np.ones((2, 2, 2, 2, 3)), padding="same")
    assert out.shape == (1, 4, 4, 4, 3)
    check(out[0, 0, 0, 0], [16.0, 16.0, 16.0])


def test_conv_errors_name_both_shapes():
    with pytest.raises(ValueError, match=r"\(1, 5, 5, 3\).*3 channels.*\(3, 3, 2, 4\)"):
        ops.conv(np.ones((1, 5, 5, 3)), np.ones((3, 3, 2, 4)))
    with pytest.raises(ValueError, match=r"\(1, 5, 3\).*\(3, 3, 3, 4\)"):
        ops.conv(np.ones((1, 5, 3)), np.ones((3, 3, 3, 4)))
    with pytest.raises(ValueError, match="padding"):
        ops.conv(np.ones((1, 5, 3)), np.ones((3, 3, 4)), padding="full")
    with pytest.raises(ValueError, match="data_format"):
        ops.conv(np.ones((1, 5, 3)), np.ones((3, 3, 4)), data_format="NHWC")
    with pytest.raises(ValueError, match=r"\(1, 5, 5, 3\).*\(3, 3, 2, 1\)"):
        ops.depthwise_conv(np.ones((1, 5, 5, 3)), np.ones((3, 3, 2, 1)))


def test_depthwise_and_separable_conv():
    x = rng.normal(size=(1, 5, 5, 2)).astype("float32")
    dw = rng.normal(size=(3, 3, 2, 2)).astype("float32")  # depth multiplier 2
    expected = np.zeros((1, 3, 3, 4))
    for c in range(2):
        for m in range(2):
            expected[..., c * 2 + m] = np_conv2d(x[..., c : c + 1], dw[:, :, c : c + 1, m : m + 1])[
                ..., 0
            ]
    check(ops.depthwise_conv(x, dw), expected, tol=1e-4)
    pw = rng.normal(size=(1, 1, 4, 3)).astype("float32")
    check(ops.separable_conv(x, dw, pw), expected @ pw[0, 0], tol=1e-4)


def np_conv_transpose2d(x, w, stride, padding):
    """x (N, H, W, C), w (k, k, F, C): scatter each input pixel times the kernel."""
    n, h, wd, c = x.shape
    k, f = w.shape[0], w.shape[2]
    full = np.zeros((n, (h - 1) * stride + k, (wd - 1) * stride + k, f))
    for i in range(h):
        for j in range(wd):
            full[:, i * stride:i * stride + k, j * stride:j * stride + k] += np.einsum(
                "nc,abfc->nabf", x[:, i, j], w)
    if padding == "valid":  # (in - 1) * stride + max(k, stride)
        size = (h - 1) * stride + max(k, stride)
        out = np.zeros((n, size, size, f))
        out[:, :full.shape[1], :full.shape[2]] = full
        return out
    # "same" is the gradient of a "same" conv on an input of length in*stride.
    offset = max(k - stride, 0) // 2
    out = np.zeros((n, h * stride + k, wd * stride + k, f))
    out[:, :full.shape[1], :full.shape[2]] = full
    return out[:, offset:offset + h * stride, offset:offset + wd * stride]


@pytest.mark.parametrize("k,stride,padding", [(3, 2, "valid"), (3, 2, "same"), (2, 3, "valid"),
                                              (4, 2, "same")])
def test_conv_transpose_matches_scatter_loop(k, stride, padding):
    x = rng.normal(size=(1, 3, 3, 2)).astype("float32")
    w = rng.normal(size=(k, k, 3, 2)).astype("float32")
    check(ops.conv_transpose(x, w, stride, padding), np_conv_transpose2d(x, w, stride, padding),
          tol=1e-4)


def test_conv_transpose_is_the_gradient_of_conv():
    x = rng.normal(size=(1, 6, 6, 3)).astype("float32")
    w = rng.normal(size=(3, 3, 3, 2)).astype("float32")
    y, vjp = jax.vjp(lambda a: ops.conv(a, w, strides=2, padding="same"), x)
    cotangent = rng.normal(size=y.shape).astype("float32")
    check(ops.conv_transpose(cotangent, w, strides=2, padding="same"), vjp(cotangent)[0],
          tol=1e-4)


# --------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------

def np_pool(x, size, stride, padding, kind):
    n, h, w, c = x.shape
    if padding == "same":
        oh, top, _ = same_padding(h, size, stride)
        ow, left, _ = same_padding(w, size, stride)
    else:
        oh, top, ow, left = (h - size) // stride + 1, 0, (w - size) // stride + 1, 0
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * stride - top, j * stride - left
            window = x[:, max(r0, 0):r0 + size, max(c0, 0):c0 + size]
            out[:, i, j] = window.max(axis=(1, 2)) if kind == "max" else window.mean(axis=(1, 2))
    return out


@pytest.mark.parametrize("size,stride,padding", [(2, 2, "valid"), (3, 2, "same"), (2, 1, "same")])
def test_pooling_matches_loop(size, stride, padding):
    x = rng.normal(size=(2, 5, 5, 3)).astype("float32")
    check(ops.max_pool(x, size, stride, padding), np_pool(x, size, stride, padding, "max"))
    check(ops.average_pool(loopax.Variable(x), size, stride, padding),
          np_pool(x, size, stride, padding, "avg"), tol=1e-5)


def test_pooling_defaults_channels_first_and_gradient():
    x = rng.normal(size=(1, 4, 4, 2)).astype("float32")
    check(ops.max_pool(x, (2, 2)), np_pool(x, 2, 2, "valid", "max"))  # strides = pool_size
    x_cf = np.transpose(x, (0, 3, 1, 2))
    check(ops.average_pool(x_cf, 2, data_format="channels_first"),
          np.transpose(np_pool(x, 2, 2, "valid", "avg"), (0, 3, 1, 2)), tol=1e-5)
    check(ops.max_pool(np.arange(6.0).reshape(1, 6, 1), 3), [[[2.0], [5.0]]])  # 1-D
    grad = jax.grad(lambda a: ops.sum(ops.max_pool(a, 2)))(x)
    is_max = x == np.repeat(np.repeat(np_pool(x, 2, 2, "valid", "max"), 2, 1), 2, 2)
    check(grad, is_max.astype("float32"))


# --------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------

def test_moments_and_batch_normalization():
    x = rng.normal(size=(4, 3, 2)).astype("float32")
    mean, var = ops.moments(x, axes=[0, 1])
    check(mean, x.mean(axis=(0, 1)))
    check(var, x.var(axis=(0, 1)))
    mean_k, _ = ops.moments(loopax.Variable(x), axes=0, keepdims=True)
    assert mean_k.shape == (1, 3, 2)
    m, v = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    gamma, beta = np.array([1.0, 2.0, 0.5]), np.array([0.0, 1.0, -1.0])
    expected = ((x - m[:, None]) / np.sqrt(v[:, None] + 1e-3) * gamma[:, None] + beta[:, None])
    check(ops.batch_normalization(x, m, v, axis=1, offset=beta, scale=gamma), expected, tol=1e-4)
    check(ops.batch_normalization(x, m, v, axis=1), (x - m[:, None]) / np.sqrt(v[:, None] + 1e-3),
          tol=1e-4)
    half = x.astype("float16")
    assert ops.moments(half, axes=0)[0].dtype == np.float16


def test_normalize_rms_and_layer_normalization():
    x = rng.normal(size=(3, 4)).astype("float32")
    check(ops.normalize(x), x / np.linalg.norm(x, axis=-1, keepdims=True), tol=1e-5)
    check(ops.normalize(x, order=1), x / np.abs(x).sum(axis=-1, keepdims=True), tol=1e-5)
    check(ops.rms_normalization(x, scale=2.0),
          2 * x / np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + 1e-7), tol=1e-5)
    check(ops.layer_normalization(x, epsilon=1e-5),
          (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5), tol=1e-4)


# --------------------------------------------------------------------------
# Crossentropies
# --------------------------------------------------------------------------

EPS = 1e-7


def test_binary_crossentropy():
    t = np.array([[1.0, 0.0], [0.0, 1.0]])
    p = np.array([[0.9, 0.2], [0.999, 0.3]])
    check(ops.binary_crossentropy(t, p), -(t * np.log(p) + (1 - t) * np.log(1 - p)), tol=1e-4)
    # Probabilities of exactly 0 and 1 are clipped to [eps, 1 - eps]: finite loss.
    edge = np.asarray(ops.binary_crossentropy(np.array([0.0, 1.0]), np.array([1.0, 0.0])))
    assert np.all((15 < edge) & (edge < 16.2)), edge
    z = np.array([[2.0, -1.0], [30.0, 0.5]])
    expected = np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z)))  # stable logits form
    check(ops.binary_crossentropy(t, loopax.Variable(z), from_logits=True), expected, tol=1e-5)
    with pytest.raises(ValueError, match=r"target.shape=\(2, 2\).*output.shape=\(2,\)"):
        ops.binary_crossentropy(t, p[0])


def test_categorical_crossentropy():
    t = np.array([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    p = np.array([[0.1, 0.6, 0.3], [2.0, 1.0, 1.0]])  # second row is renormalized
    pn = p / p.sum(-1, keepdims=True)
    check(ops.categorical_crossentropy(t, p), -(t * np.log(pn)).sum(-1), tol=1e-5)
    z = rng.normal(size=(2, 3))
    log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
    check(ops.categorical_crossentropy(t, z, from_logits=True), -(t * log_p).sum(-1), tol=1e-5)
    check(ops.categorical_crossentropy(t.T, z.T, from_logits=True, axis=0),
          -(t * log_p).sum(-1), tol=1e-5)
    with pytest.raises(ValueError, match=r"target.shape=\(2,\).*output.shape=\(2, 3\)"):
        ops.categorical_crossentropy(np.array([1, 2]), p)


def test_sparse_categorical_crossentropy():
    labels = np.array([1, 2])
    z = rng.normal(size=(2, 3))
    log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
    expected = -log_p[np.arange(2), labels]
    check(ops.sparse_categorical_crossentropy(labels, z, from_logits=True), expected, tol=1e-5)
    check(ops.sparse_categorical_crossentropy(labels[:, None], z, from_logits=True), expected,
          tol=1e-5)
    probs = np.exp(log_p)
    check(ops.sparse_categorical_crossentropy(labels, probs), expected, tol=1e-5)
    check(ops.sparse_categorical_crossentropy(labels, z.T, from_logits=True, axis=0), expected,
          tol=1e-5)
    with pytest.raises(ValueError, match=r"target.shape=\(3,\).*output.shape=\(2, 3\)"):
        ops.sparse_categorical_crossentropy(np.array([0, 1, 2]), z)


# --------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------

def np_attention(q, k, v, mask=None):
    b, t, n, h = q.shape
    out = np.zeros_like(q)
    for i in range(b):
        for head in range(n):
            logits = q[i, :, head] @ k[i, :, head].T / np.sqrt(h)
            if mask is not None:
                logits = np.where(mask, logits, -1e30)
            out[i, :, head] = np_softmax(logits) @ v[i, :, head]
    return out


def test_dot_product_attention():
    q = rng.normal(size=(2, 4, 2, 3)).astype("float32")
    k = rng.normal(size=(2, 5, 2, 3)).astype("float32")
    v = rng.normal(size=(2, 5, 2, 3)).astype("float32")
    check(ops.dot_product_attention(q, k, v), np_attention(q, k, v), tol=1e-5)
    causal = np.tril(np.ones((4, 4), bool))
    check(ops.dot_product_attention(q, q, q, is_causal=True), np_attention(q, q, q, causal),
          tol=1e-5)
    mask = rng.random((4, 5)) > 0.3
    mask[:, 0] = True
    check(ops.dot_product_attention(q, k, v, mask=mask), np_attention(q, k, v, mask), tol=1e-5)
    # Grouped-query attention: 1 key/value head shared by both query heads.
    k1, v1 = k[:, :, :1], v[:, :, :1]
    check(ops.dot_product_attention(q, k1, v1),
          np_attention(q, np.repeat(k1, 2, 2), np.repeat(v1, 2, 2)), tol=1e-5)
    with pytest.raises(ValueError, match="heads"):
        ops.dot_product_attention(q, k[:, :, :1].repeat(3, 2), v)
