"""Every loss against a NumPy closed form (float64), with sample weights,
reductions, logits and label smoothing; selected ones against optax."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopax
from loopax import losses

EPS = 1e-7
rng = np.random.default_rng(0)
B, D = 4, 3
Y_REAL = rng.normal(size=(B, D)).astype(np.float32)
P_REAL = rng.normal(size=(B, D)).astype(np.float32)
Y_POS = rng.uniform(0.1, 2.0, size=(B, D)).astype(np.float32)
P_POS = rng.uniform(0.1, 2.0, size=(B, D)).astype(np.float32)
Y_BIN = rng.integers(0, 2, size=(B, D)).astype(np.float32)
P_PROB = rng.uniform(0.05, 0.95, size=(B, D)).astype(np.float32)
LOGITS = rng.normal(size=(B, D)).astype(np.float32) * 2
LABELS = np.array([0, 2, 1, 2])
ONE_HOT = np.eye(D, dtype=np.float32)[LABELS]
PROBS = np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
DIST_T = rng.dirichlet(np.ones(D), size=B).astype(np.float32)
W = np.array([0.5, 2.0, 0.0, 1.5], np.float32)


# ---- NumPy closed forms (per-sample, float64) ------------------------------
def f64(*xs):
    return [np.asarray(x, np.float64) for x in xs]


def np_mse(t, p):
    t, p = f64(t, p)
    return np.mean((t - p) ** 2, -1)
def np_mae(t, p):
    t, p = f64(t, p)
    return np.mean(np.abs(t - p), -1)
def np_mape(t, p):
    t, p = f64(t, p)
    return 100 * np.mean(np.abs((t - p) / np.maximum(np.abs(t), EPS)), -1)
def np_msle(t, p):
    t, p = f64(t, p)
    return np.mean((np.log1p(np.maximum(p, EPS)) - np.log1p(np.maximum(t, EPS))) ** 2, -1)
def np_logcosh(t, p):
    t, p = f64(t, p)
    return np.mean(np.log(np.cosh(p - t)), -1)
def np_poisson(t, p):
    t, p = f64(t, p)
    return np.mean(p - t * np.log(p + EPS), -1)


def np_huber(t, p, delta=1.0):
    t, p = f64(t, p)
    e = np.abs(p - t)
    return np.mean(np.where(e <= delta, 0.5 * e ** 2, delta * (e - 0.5 * delta)), -1)


def np_cosine(t, p):
    t, p = f64(t, p)
    return -np.sum(t * p, -1) / (np.linalg.norm(t, axis=-1) * np.linalg.norm(p, axis=-1))


def np_kld(t, p):
    t, p = f64(t, p)
    t, p = np.clip(t, EPS, 1), np.clip(p, EPS, 1)
    return np.sum(t * np.log(t / p), -1)


def np_bce(t, p, smoothing=0.0):
    t, p = f64(t, p)
    t = t * (1 - smoothing) + 0.5 * smoothing
    p = np.clip(p, EPS, 1 - EPS)
    return np.mean(-(t * np.log(p) + (1 - t) * np.log(1 - p)), -1)


def np_cce(t, p, smoothing=0.0):
    t, p = f64(t, p)
    t = t * (1 - smoothing) + smoothing / t.shape[-1]
    p = np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)
    return -np.sum(t * np.log(p), -1)


def np_log_softmax(z):
    z = np.asarray(z, np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def np_hinge_labels(t):
    return 2 * t - 1 if np.all((t == 0) | (t == 1)) else t


def np_hinge(t, p):
    t, p = f64(t, p)
    return np.mean(np.maximum(1 - np_hinge_labels(t) * p, 0), -1)
def np_sq_hinge(t, p):
    t, p = f64(t, p)
    return np.mean(np.maximum(1 - np_hinge_labels(t) * p, 0) ** 2, -1)


def np_cat_hinge(t, p):
    t, p = f64(t, p)
    return np.maximum(np.max((1 - t) * p, -1) - np.sum(t * p, -1) + 1, 0)


def np_focal(t, p, gamma=2.0, alpha=0.25, balance=False):
    t, p = f64(t, p)
    pc = np.clip(p, EPS, 1 - EPS)
    bce = -(t * np.log(pc) + (1 - t) * np.log(1 - pc))
    p_t = t * p + (1 - t) * (1 - p)
    out = (1 - p_t) ** gamma * bce
    if balance:
        out = (t * alpha + (1 - t) * (1 - alpha)) * out
    return np.mean(out, -1)


CASES = [
    (losses.MeanSquaredError, losses.mean_squared_error, np_mse, Y_REAL, P_REAL),
    (losses.MeanAbsoluteError, losses.mean_absolute_error, np_mae, Y_REAL, P_REAL),
    (
        losses.MeanAbsolutePercentageError,
        losses.mean_absolute_percentage_error,
        np_mape,
        Y_REAL,
        P_REAL,
    ),
    (
        losses.MeanSquaredLogarithmicError,
        losses.mean_squared_logarithmic_error,
        np_msle,
        Y_POS,
        P_POS,
    ),
    (losses.Huber, losses.huber, np_huber, Y_REAL, P_REAL * 2),
    (losses.LogCosh, losses.log_cosh, np_logcosh, Y_REAL, P_REAL),
    (losses.CosineSimilarity, losses.cosine_similarity, np_cosine, Y_REAL, P_REAL),
    (losses.BinaryCrossentropy, losses.binary_crossentropy, np_bce, Y_BIN, P_PROB),
    (losses.BinaryFocalCrossentropy, losses.binary_focal_crossentropy, np_focal, Y_BIN, P_PROB),
    (losses.CategoricalCrossentropy, losses.categorical_crossentropy, np_cce, ONE_HOT, PROBS),
    (losses.KLDivergence, losses.kl_divergence, np_kld, DIST_T, PROBS),
    (losses.Poisson, losses.poisson, np_poisson, Y_POS, P_POS),
    (losses.Hinge, losses.hinge, np_hinge, Y_BIN, P_REAL),
    (losses.SquaredHinge, losses.squared_hinge, np_sq_hinge, Y_BIN, P_REAL),
    (losses.CategoricalHinge, losses.categorical_hinge, np_cat_hinge, ONE_HOT, P_REAL),
]
IDS = [c[0].__name__ for c in CASES]


@pytest.mark.parametrize("cls, fn, ref, y, p", CASES, ids=IDS)
def test_function_form_is_per_sample_closed_form(cls, fn, ref, y, p):
    out = fn(y, p)
    assert out.shape == (B,)
    np.testing.assert_allclose(out, ref(y, p), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("cls, fn, ref, y, p", CASES, ids=IDS)
def test_class_reductions_and_sample_weight(cls, fn, ref, y, p):
    per_sample = ref(y, p)
    np.testing.assert_allclose(cls()(y, p), per_sample.mean(), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(cls(reduction="sum")(y, p), per_sample.sum(), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(cls(reduction="none")(y, p), per_sample, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(cls(reduction=None)(y, p), per_sample, rtol=2e-5, atol=1e-6)
    # Keras: the weighted sum is divided by the batch size, not the weights' sum.
    weighted = (per_sample * W).sum()
    np.testing.assert_allclose(cls()(y, p, sample_weight=W), weighted / B, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(
        cls()(y, p, sample_weight=W[:, None]), weighted / B, rtol=2e-5, atol=1e-6
    )
    np.testing.assert_allclose(cls(reduction="mean_with_sample_weight")(y, p, sample_weight=W),
                               weighted / W.sum(), rtol=2e-5, atol=1e-6)


def test_sparse_categorical_crossentropy_closed_form():
    ref = np_cce(ONE_HOT, PROBS)
    np.testing.assert_allclose(
        losses.sparse_categorical_crossentropy(LABELS, PROBS), ref, rtol=1e-5
    )
    # Labels of shape (batch, 1) and float labels work the same.
    np.testing.assert_allclose(
        losses.sparse_categorical_crossentropy(LABELS[:, None].astype(np.float32), PROBS),
        ref,
        rtol=1e-5,
    )
    loss = losses.SparseCategoricalCrossentropy()
    np.testing.assert_allclose(loss(LABELS, PROBS, sample_weight=W), (ref * W).sum() / B, rtol=1e-5)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_from_logits_and_label_smoothing(smoothing):
    # Categorical: logits through log-softmax, smoothed labels.
    t = ONE_HOT * (1 - smoothing) + smoothing / D
    expected = -np.sum(t * np_log_softmax(LOGITS), -1).mean()
    got = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=smoothing)(
        ONE_HOT, LOGITS
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    np.testing.assert_allclose(
        losses.CategoricalCrossentropy(label_smoothing=smoothing)(ONE_HOT, PROBS),
        np_cce(ONE_HOT, PROBS, smoothing).mean(), rtol=1e-5)
    # Binary: log-sigmoid of logits, labels smoothed towards 0.5.
    tb = Y_BIN * (1 - smoothing) + 0.5 * smoothing
    z = LOGITS.astype(np.float64)
    expected = np.mean(tb * np.log1p(np.exp(-z)) + (1 - tb) * np.log1p(np.exp(z)), -1).mean()
    got = losses.BinaryCrossentropy(from_logits=True, label_smoothing=smoothing)(Y_BIN, LOGITS)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    np.testing.assert_allclose(
        losses.BinaryCrossentropy(label_smoothing=smoothing)(Y_BIN, P_PROB),
        np_bce(Y_BIN, P_PROB, smoothing).mean(), rtol=1e-5)


def test_sparse_from_logits_and_focal_options():
    expected = -np_log_softmax(LOGITS)[np.arange(B), LABELS].mean()
    np.testing.assert_allclose(
        losses.SparseCategoricalCrossentropy(from_logits=True)(LABELS, LOGITS), expected, rtol=1e-5)
    sig = 1 / (1 + np.exp(-LOGITS.astype(np.float64)))
    got = losses.BinaryFocalCrossentropy(from_logits=True, gamma=1.5, apply_class_balancing=True,
                                         alpha=0.3)(Y_BIN, LOGITS)
    np.testing.assert_allclose(got, np_focal(Y_BIN, sig, 1.5, 0.3, True).mean(), rtol=1e-5)
    np.testing.assert_allclose(losses.Huber(delta=0.5)(Y_REAL, P_REAL * 2),
                               np_huber(Y_REAL, P_REAL * 2, 0.5).mean(), rtol=1e-5)


def test_against_optax():
    np.testing.assert_allclose(losses.categorical_crossentropy(ONE_HOT, LOGITS, from_logits=True),
                               optax.losses.softmax_cross_entropy(LOGITS, ONE_HOT), rtol=1e-5)
    np.testing.assert_allclose(
        losses.sparse_categorical_crossentropy(LABELS, LOGITS, from_logits=True),
        optax.losses.softmax_cross_entropy_with_integer_labels(LOGITS, LABELS), rtol=1e-5)
    np.testing.assert_allclose(
        losses.binary_crossentropy(Y_BIN, LOGITS, from_logits=True),
        optax.losses.sigmoid_binary_cross_entropy(LOGITS, Y_BIN).mean(-1), rtol=1e-5)
    np.testing.assert_allclose(
        losses.huber(Y_REAL, 2 * P_REAL, delta=0.7),
        optax.losses.huber_loss(2 * P_REAL, Y_REAL, delta=0.7).mean(-1),
        rtol=1e-5,
    )
    np.testing.assert_allclose(losses.mean_squared_error(Y_REAL, P_REAL),
                               optax.losses.squared_error(P_REAL, Y_REAL).mean(-1), rtol=1e-5)
    np.testing.assert_allclose(losses.log_cosh(Y_REAL, P_REAL),
                               optax.losses.log_cosh(P_REAL, Y_REAL).mean(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(losses.cosine_similarity(Y_REAL, P_REAL),
                               -optax.losses.cosine_similarity(P_REAL, Y_REAL), rtol=1e-5)
    np.testing.assert_allclose(losses.kl_divergence(DIST_T, PROBS),
                               optax.losses.kl_divergence(np.log(PROBS), DIST_T), rtol=1e-4)
    signs = 2 * Y_BIN - 1
    np.testing.assert_allclose(losses.hinge(signs, P_REAL),
                               optax.losses.hinge_loss(P_REAL, signs).mean(-1), rtol=1e-5)


def test_label_and_prediction_rank_fix():
    # (batch,) labels against (batch, 1) predictions compare sample by sample.
    y, p = np.array([1.0, 2.0, 3.0]), np.array([[1.5], [2.0], [2.0]])
    np.testing.assert_allclose(losses.MeanSquaredError()(y, p), (0.25 + 0 + 1) / 3, rtol=1e-6)
    np.testing.assert_allclose(losses.mean_squared_error(y, p), [0.25, 0, 1], rtol=1e-6)
    np.testing.assert_allclose(
        losses.MeanSquaredError()(y[:, None], p[:, 0]), (0.25 + 0 + 1) / 3, rtol=1e-6
    )
    yb, pb = np.array([0.0, 1.0]), np.array([[0.2], [0.7]])
    np.testing.assert_allclose(losses.BinaryCrossentropy()(yb, pb),
                               np.mean([-np.log(0.8), -np.log(0.7)]), rtol=1e-5)


def test_sequence_losses_take_per_sample_weights():
    # Per-timestep losses (batch, T) with (batch,) weights: each sample's
    # weight applies to all its timesteps.
    y = rng.integers(0, D, size=(2, 5))
    z = rng.normal(size=(2, 5, D)).astype(np.float32)
    per_step = -np.take_along_axis(np_log_softmax(z), y[..., None], -1)[..., 0]
    w = np.array([1.0, 3.0], np.float32)
    got = losses.SparseCategoricalCrossentropy(from_logits=True)(y, z, sample_weight=w)
    np.testing.assert_allclose(got, (per_step * w[:, None]).sum() / per_step.size, rtol=1e-5)
    # And per-timestep weights of the losses' shape weight each step.
    w2 = rng.uniform(size=(2, 5)).astype(np.float32)
    got = losses.SparseCategoricalCrossentropy(from_logits=True)(y, z, sample_weight=w2)
    np.testing.assert_allclose(got, (per_step * w2).sum() / per_step.size, rtol=1e-5)


def test_ignore_class_averages_over_valid_entries():
    y = np.array([0, 2, -1, 1])
    per_sample = -np_log_softmax(LOGITS)[np.arange(B), np.where(y < 0, 0, y)]
    valid = y != -1
    loss = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)
    np.testing.assert_allclose(loss(y, LOGITS), per_sample[valid].mean(), rtol=1e-5)
    np.testing.assert_allclose(
        losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1, reduction="sum")(
            y, LOGITS
        ),
        per_sample[valid].sum(),
        rtol=1e-5,
    )
    fn = losses.sparse_categorical_crossentropy(y, LOGITS, from_logits=True, ignore_class=-1)
    np.testing.assert_allclose(fn, np.where(valid, per_sample, 0), rtol=1e-5)


def test_hinge_keeps_signed_labels():
    signs = np.array([[-1.0, 1.0], [1.0, -1.0]])
    p = np.array([[0.3, 0.2], [-0.5, 2.0]])
    np.testing.assert_allclose(
        losses.hinge(signs, p), [(1.3 + 0.8) / 2, (1.5 + 3.0) / 2], rtol=1e-6
    )


def test_gradient_of_categorical_crossentropy_from_logits():
    # d/dz mean_i CE(y_i, softmax(z_i)) = (softmax(z) - y) / batch.
    grad = jax.grad(lambda z: losses.CategoricalCrossentropy(from_logits=True)(ONE_HOT, z))(LOGITS)
    np.testing.assert_allclose(grad, (PROBS - ONE_HOT) / B, rtol=1e-5, atol=1e-7)


def test_runs_under_jit_with_the_same_numbers():
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)
    jitted = jax.jit(lambda y, z, w: loss(y, z, sample_weight=w))
    np.testing.assert_allclose(
        jitted(LABELS, LOGITS, W), loss(LABELS, LOGITS, sample_weight=W), rtol=1e-6
    )
    mse = jax.jit(lambda y, p: losses.mse(y, p))
    np.testing.assert_allclose(mse(Y_REAL, P_REAL), np_mse(Y_REAL, P_REAL), rtol=1e-5)


def test_dtype_and_wrapped_inputs():
    # Integer labels are cast to y_pred's dtype; Variables and Tensors work.
    out = losses.MeanSquaredError()(np.array([[1], [2]]), loopax.Variable(np.array([[1.5], [2.0]])))
    assert out.dtype == jnp.float32
    np.testing.assert_allclose(out, 0.125, rtol=1e-6)
    out = losses.mean_absolute_error(loopax.constant([[1.0, 2.0]]), np.array([[0.0, 0.0]]))
    np.testing.assert_allclose(out, [1.5])


def test_shape_mismatch_errors_name_both_shapes():
    with pytest.raises(ValueError, match=r"\(4,\).*\(4, 3\)"):
        losses.MeanSquaredError()(np.zeros(4), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy"):
        losses.CategoricalCrossentropy()(LABELS, PROBS)
    with pytest.raises(ValueError, match=r"\(4, 2\).*\(4, 3\)"):
        losses.SparseCategoricalCrossentropy()(np.zeros((4, 2)), PROBS)
    with pytest.raises(ValueError, match="sample_weight"):
        losses.MeanSquaredError()(Y_REAL, P_REAL, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="reduction"):
        losses.MeanSquaredError(reduction="average")


def test_custom_loss_subclass():
    class Quartic(losses.Loss):
        def call(self, y_true, y_pred):
            return jnp.mean((y_true - y_pred) ** 4, axis=-1)

    loss = Quartic()
    assert loss.name == "quartic"
    np.testing.assert_allclose(
        loss(Y_REAL, P_REAL, sample_weight=W),
        (np.mean((Y_REAL - P_REAL).astype(np.float64) ** 4, -1) * W).sum() / B,
        rtol=1e-5,
    )


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-10, 10, width=32), min_size=6, max_size=6),
       st.lists(st.floats(0, 5, width=32), min_size=3, max_size=3))
def test_reduction_invariants(values, weights):
    y = np.zeros((3, 2), np.float32)
    p = np.asarray(values, np.float32).reshape(3, 2)
    w = np.asarray(weights, np.float32)
    per_sample = np.asarray(losses.MeanSquaredError(reduction="none")(y, p))
    total = float(losses.MeanSquaredError(reduction="sum")(y, p, sample_weight=w))
    np.testing.assert_allclose(total, (per_sample * w).sum(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(losses.MeanSquaredError()(y, p, sample_weight=w), total / 3,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(losses.MeanSquaredError()(y, p, sample_weight=np.ones(3)),
                               losses.MeanSquaredError()(y, p), rtol=1e-6)


def test_rank_one_inputs():
    # Element-wise losses: a (batch,) pair is one loss per sample.
    y, p, w = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 0.0]), np.array([1.0, 2.0, 0.5])
    np.testing.assert_allclose(losses.MeanSquaredError(reduction="none")(y, p), [1.0, 0.0, 4.0])
    np.testing.assert_allclose(losses.MeanSquaredError(reduction="sum")(y, p, sample_weight=w), 3.0)
    np.testing.assert_allclose(losses.MeanAbsoluteError()(y, p, sample_weight=w), (1 + 0 + 1) / 3)
    # Losses over a class or feature axis: a (classes,) pair is one sample.
    np.testing.assert_allclose(losses.CategoricalCrossentropy()([0.0, 1.0, 0.0], [0.05, 0.95, 0.0]),
                               -np.log(0.95), rtol=1e-6)
    np.testing.assert_allclose(losses.CosineSimilarity()([1.0, 0.0], [2.0, 0.0]), -1.0, rtol=1e-6)
    # Function forms keep Keras's result: the mean over the last axis.
    np.testing.assert_allclose(losses.mean_squared_error(y, p), 5 / 3, rtol=1e-6)


def test_a_recording_tape_differentiates_loss_objects_and_functions():
    from loopax.src.tape import GradientTape
    w = loopax.Variable(np.array([[1.0, -2.0, 0.5]], np.float32))
    x = np.array([[1.0], [0.5], [-1.0], [2.0]], np.float32)
    loss_fn = losses.SparseCategoricalCrossentropy(from_logits=True)
    with GradientTape() as tape:
        loss = loss_fn(LABELS, loopax.ops.matmul(x, w), sample_weight=W)
        other = losses.mse(np.zeros((B, D)), loopax.ops.matmul(x, w))
    grads = tape.gradient([loss, other], [w, w])
    ref = jax.grad(lambda v: loss_fn(LABELS, x @ v, sample_weight=W))(w.value)
    ref_mse = jax.grad(lambda v: losses.mse(np.zeros((B, D)), x @ v).sum())(w.value)
    np.testing.assert_allclose(grads[0], ref + ref_mse, rtol=1e-5)
