"""Mean/Sum, regression and accuracy metrics over several batches against
NumPy and hand counts; every metric statelessly under jax.jit."""

import jax
import numpy as np
import pytest

from loopax import metrics

rng = np.random.default_rng(1)


def test_mean_and_sum_with_weights_and_shapes():
    m, s = metrics.Mean(), metrics.Sum()
    m.update_state(2.0)                                    # a scalar counts once
    m.update_state([[1.0, 3.0], [5.0, 7.0]])               # per-sample means 2 and 6
    m.update_state([4.0, 8.0], sample_weight=[3.0, 1.0])
    np.testing.assert_allclose(m.result(), (2 + 2 + 6 + 12 + 8) / (1 + 2 + 4), rtol=1e-6)
    s.update_state([[1.0, 3.0], [5.0, 7.0]], sample_weight=[1.0, 0.5])
    s.update_state(10.0)
    np.testing.assert_allclose(s.result(), 4 + 6 + 10, rtol=1e-6)
    m.reset_state()
    np.testing.assert_allclose(m.result(), 0.0)  # 0 / 0 reads 0


def test_mean_with_elementwise_weights_is_the_weighted_mean():
    v = rng.normal(size=(3, 4)).astype(np.float32)
    w = rng.uniform(size=(3, 4)).astype(np.float32)
    m = metrics.Mean()
    m.update_state(v, sample_weight=w)
    np.testing.assert_allclose(m.result(), (v * w).sum() / w.sum(), rtol=1e-5)


def _batches(n=3, shape=(4, 3)):
    return [(rng.normal(size=shape).astype(np.float32), rng.normal(size=shape).astype(np.float32),
             rng.uniform(0.1, 2.0, size=shape[0]).astype(np.float32)) for _ in range(n)]


@pytest.mark.parametrize("cls, per_sample", [
    (metrics.MeanSquaredError, lambda t, p: ((t - p) ** 2).mean(-1)),
    (metrics.MeanAbsoluteError, lambda t, p: np.abs(t - p).mean(-1)),
    (metrics.LogCoshError, lambda t, p: np.log(np.cosh(p - t)).mean(-1)),
    (metrics.CosineSimilarity, lambda t, p: (t * p).sum(-1) / np.linalg.norm(t, axis=-1)
     / np.linalg.norm(p, axis=-1)),
], ids=["mse", "mae", "logcosh", "cosine"])
def test_regression_metrics_weighted_over_batches(cls, per_sample):
    m = cls()
    num = den = 0.0
    for t, p, w in _batches():
        m.update_state(t, p, sample_weight=w)
        t64, p64 = t.astype(np.float64), p.astype(np.float64)
        num += (per_sample(t64, p64) * w).sum()
        den += w.sum()
    np.testing.assert_allclose(m.result(), num / den, rtol=1e-5)


def test_root_mean_squared_error():
    m = metrics.RootMeanSquaredError()
    sq = []
    for t, p, _ in _batches():
        m.update_state(t, p)
        sq.append(((t - p) ** 2).astype(np.float64).mean(-1))
    np.testing.assert_allclose(m.result(), np.sqrt(np.concatenate(sq).mean()), rtol=1e-5)
    m.reset_state()
    m.update_state([1.0, 2.0], [[1.0], [4.0]], sample_weight=[1.0, 3.0])
    np.testing.assert_allclose(m.result(), np.sqrt(3 * 4.0 / 4), rtol=1e-6)


def test_accuracy_family_hand_counts():
    acc = metrics.Accuracy()
    acc.update_state([1, 2, 3, 4], [1, 2, 0, 4])   # (batch,) inputs: each sample counts
    acc.update_state([[1], [2]], [[0], [2]])
    np.testing.assert_allclose(acc.result(), 4 / 6)
    acc.reset_state()
    acc.update_state([[1, 2], [3, 4]], [[1, 2], [0, 4]])  # per-sample mean over the last axis
    np.testing.assert_allclose(acc.result(), (1 + 0.5) / 2)

    bin_acc = metrics.BinaryAccuracy()
    bin_acc.update_state([[1], [0], [1], [0]], [[0.7], [0.4], [0.5], [0.9]])  # 0.5 is not > 0.5
    np.testing.assert_allclose(bin_acc.result(), 2 / 4)
    bin_acc.update_state([1, 1], [[0.6], [0.2]], sample_weight=[2.0, 1.0])  # (batch,) vs (batch, 1)
    np.testing.assert_allclose(bin_acc.result(), (2 + 2) / (4 + 3))
    high = metrics.BinaryAccuracy(threshold=0.8)
    high.update_state([[1, 0]], [[0.7, 0.1]])
    np.testing.assert_allclose(high.result(), 0.5)

    cat = metrics.CategoricalAccuracy()
    cat.update_state(np.eye(3)[[0, 1, 2]], [[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    cat.update_state(np.eye(3)[[1]], [[0.1, 0.8, 0.1]], sample_weight=[3.0])
    np.testing.assert_allclose(cat.result(), (2 + 3) / (3 + 3))

    sparse = metrics.SparseCategoricalAccuracy()
    sparse.update_state([0, 1, 2], [[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    sparse.update_state([[1.0]], [[0.1, 0.8, 0.1]])  # float labels with a trailing 1
    np.testing.assert_allclose(sparse.result(), 3 / 4)


def test_rank_one_batches_count_each_sample():
    # A short last batch of (batch,) values weighs by its samples, not as one.
    mae = metrics.MeanAbsoluteError()
    mae.update_state([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    mae.update_state([0.0], [4.0])
    np.testing.assert_allclose(mae.result(), (1 + 1 + 1 + 4) / 4)
    # A (classes,) one-hot pair is one sample for the categorical metrics.
    cat = metrics.CategoricalAccuracy()
    cat.update_state([0, 1, 0], [0.2, 0.7, 0.1])
    np.testing.assert_allclose(cat.result(), 1.0)


def test_sequence_accuracy_counts_each_sample_once():
    y = np.array([[0, 1, 1], [2, 2, 0]])
    p = np.eye(3)[[[0, 1, 0], [2, 1, 0]]]   # sample 0: 2/3 right, sample 1: 2/3 right
    m = metrics.SparseCategoricalAccuracy()
    m.update_state(y, p, sample_weight=[1.0, 0.0])
    np.testing.assert_allclose(m.result(), 2 / 3, rtol=1e-6)


def test_top_k_with_ties_counts_as_in():
    p = np.array([[0.1, 0.5, 0.5, 0.2], [0.4, 0.3, 0.2, 0.1], [0.3, 0.3, 0.3, 0.1]])
    labels = np.array([2, 2, 1])
    top2 = metrics.SparseTopKCategoricalAccuracy(k=2)
    top2.update_state(labels, p)
    # row 0: label score 0.5 ties the top; row 1: third best; row 2: three-way tie.
    np.testing.assert_allclose(top2.result(), 2 / 3)
    onehot = metrics.TopKCategoricalAccuracy(k=3)
    onehot.update_state(np.eye(4)[labels], p, sample_weight=[1.0, 2.0, 1.0])
    np.testing.assert_allclose(onehot.result(), 1.0)
    ids = metrics.SparseTopKCategoricalAccuracy(k=2, from_sorted_ids=True)
    ids.update_state([3, 0], [[3, 1, 2], [2, 1, 0]])
    np.testing.assert_allclose(ids.result(), 0.5)


def test_crossentropy_metrics_are_running_means_of_the_losses():
    y = np.array([0, 2, 1])
    z = rng.normal(size=(3, 3)).astype(np.float32)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    m = metrics.SparseCategoricalCrossentropy(from_logits=True)
    m.update_state(y, z)
    m.update_state(y[:1], z[:1], sample_weight=[2.0])
    per = -logp[np.arange(3), y]
    np.testing.assert_allclose(m.result(), (per.sum() + 2 * per[0]) / 5, rtol=1e-5)


def test_mean_metric_wrapper_with_a_custom_function():
    def cubed_error(y_true, y_pred):
        return ((y_pred - y_true) ** 3).mean(-1)

    m = metrics.MeanMetricWrapper(cubed_error)
    assert m.name.startswith("mean_metric_wrapper")   # Keras 3's automatic name
    m.update_state(np.zeros((2, 2)), np.array([[1.0, 2.0], [-1.0, 0.0]]))
    np.testing.assert_allclose(m.result(), (4.5 + -0.5) / 2)


# Every metric: three batches stateful == three batches stateless under jit, and reset works.
BATCHES_BINARY = [(rng.integers(0, 2, size=(5, 1)).astype(np.float32),
                   rng.uniform(size=(5, 1)).astype(np.float32),
                   rng.uniform(0.5, 2, size=5).astype(np.float32)) for _ in range(3)]
BATCHES_CAT = [(np.eye(4, dtype=np.float32)[rng.integers(0, 4, 5)],
                rng.dirichlet(np.ones(4), 5).astype(np.float32),
                rng.uniform(0.5, 2, size=5).astype(np.float32)) for _ in range(3)]
BATCHES_EXACT = [(t, np.round(p), w) for t, p, w in BATCHES_BINARY]
BATCHES_SPARSE = [(c.argmax(-1), p, w) for c, p, w in BATCHES_CAT]
BATCHES_REAL = [
    (
        rng.normal(size=(5, 2)).astype(np.float32),
        rng.normal(size=(5, 2)).astype(np.float32),
        rng.uniform(0.5, 2, size=5).astype(np.float32),
    )
    for _ in range(3)
]

ALL = [
    (metrics.MeanSquaredError, BATCHES_REAL),
    (metrics.MeanAbsoluteError, BATCHES_REAL),
    (metrics.RootMeanSquaredError, BATCHES_REAL),
    (metrics.MeanAbsolutePercentageError, BATCHES_REAL),
    (metrics.CosineSimilarity, BATCHES_REAL),
    (metrics.Accuracy, BATCHES_EXACT),
    (metrics.BinaryAccuracy, BATCHES_BINARY),
    (metrics.CategoricalAccuracy, BATCHES_CAT),
    (metrics.SparseCategoricalAccuracy, BATCHES_SPARSE),
    (lambda: metrics.TopKCategoricalAccuracy(k=2), BATCHES_CAT),
    (lambda: metrics.SparseTopKCategoricalAccuracy(k=2), BATCHES_SPARSE),
    (metrics.BinaryCrossentropy, BATCHES_BINARY),
    (metrics.CategoricalCrossentropy, BATCHES_CAT),
    (metrics.Precision, BATCHES_BINARY),
    (metrics.Recall, BATCHES_BINARY),
    (lambda: metrics.AUC(num_thresholds=50), BATCHES_BINARY),
    (lambda: metrics.AUC(curve="PR"), BATCHES_BINARY),
    (lambda: metrics.TruePositives(thresholds=[0.3, 0.6]), BATCHES_BINARY),
]


@pytest.mark.parametrize("make, batches", ALL, ids=[make().name for make, _ in ALL])
def test_stateless_under_jit_equals_stateful(make, batches):
    metric = make()
    step = jax.jit(
        lambda values, t, p, w: metric.stateless_update_state(values, t, p, sample_weight=w)
    )
    result = jax.jit(metric.stateless_result)
    values = metric.stateless_reset_state()
    for t, p, w in batches:
        metric.update_state(t, p, sample_weight=w)
        values = step(values, t, p, w)
        np.testing.assert_allclose(result(values), metric.result(), rtol=1e-5, atol=1e-6)
    assert float(np.max(np.abs(metric.result()))) > 0  # the data moved the metric
    metric.reset_state()
    for variable, initial in zip(metric.variables, metric.stateless_reset_state()):
        np.testing.assert_array_equal(variable.numpy(), initial)
        np.testing.assert_array_equal(initial, np.zeros_like(initial))
