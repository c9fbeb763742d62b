"""Precision, Recall, the count metrics and AUC against NumPy counting and a
NumPy implementation of Keras's curve rules; AUC against the exact
(Mann-Whitney) ROC area."""

import numpy as np
import pytest

from loopax import metrics

EPS = 1e-7
rng = np.random.default_rng(2)


def np_counts(y, p, thresholds, w=None):
    """(tp, fp, tn, fn) arrays over thresholds, by direct comparison."""
    y, p = np.ravel(y) != 0, np.ravel(p).astype(np.float64)
    w = np.ones_like(p) if w is None else np.ravel(w).astype(np.float64)
    above = p[None, :] > np.asarray(thresholds, np.float64)[:, None]
    return ((above & y) * w).sum(1), ((above & ~y) * w).sum(1), \
           ((~above & ~y) * w).sum(1), ((~above & y) * w).sum(1)


def div(a, b):
    return np.where(b == 0, 0.0, a / np.where(b == 0, 1, b))


def np_auc(tp, fp, tn, fn, curve, method):
    """Keras's rule: Riemann sums over threshold intervals, or for PR with
    interpolation the Davis-Goadrich interpolated precision."""
    if curve == "PR" and method == "interpolation":
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = div(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        ratio = np.where((p[:-1] > 0) & (p[1:] > 0), div(p[:-1], np.maximum(p[1:], 0)), 1.0)
        return div(slope * (dtp + intercept * np.log(ratio)), np.maximum(tp[1:] + fn[1:], 0)).sum()
    recall = div(tp, tp + fn)
    x, y = (div(fp, fp + tn), recall) if curve == "ROC" else (recall, div(tp, tp + fp))
    h = {"interpolation": (y[:-1] + y[1:]) / 2, "minoring": np.minimum(y[:-1], y[1:]),
         "majoring": np.maximum(y[:-1], y[1:])}[method]
    return ((x[:-1] - x[1:]) * h).sum()


def auc_thresholds(n):
    return [-EPS] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + EPS]


def test_precision_recall_hand_counts():
    y = [0, 1, 1, 1, 0, 1]
    p = [0.6, 0.2, 0.7, 0.5, 0.3, 0.9]    # positive when > 0.5
    prec, rec = metrics.Precision(), metrics.Recall()
    prec.update_state(y, p)
    rec.update_state(y, p)
    np.testing.assert_allclose(prec.result(), 2 / 3)   # tp = 2 (0.7, 0.9), fp = 1 (0.6)
    np.testing.assert_allclose(rec.result(), 2 / 4)    # fn = 2 (0.2, 0.5)
    prec.update_state([1, 0], [0.8, 0.9], sample_weight=[2.0, 3.0])
    np.testing.assert_allclose(prec.result(), (2 + 2) / (2 + 2 + 1 + 3))
    prec.reset_state()
    np.testing.assert_allclose(prec.result(), 0.0)


def test_precision_recall_several_thresholds_and_weights_over_batches():
    thresholds = [0.0, 0.25, 0.5, 0.8]
    prec, rec = metrics.Precision(thresholds=thresholds), metrics.Recall(thresholds=thresholds)
    total = np.zeros((4, len(thresholds)))
    for _ in range(3):
        y = rng.integers(0, 2, size=(6, 2))
        p = rng.uniform(size=(6, 2)).astype(np.float32)
        w = rng.uniform(size=6).astype(np.float32)
        prec.update_state(y, p, sample_weight=w)
        rec.update_state(y, p, sample_weight=w)
        total += np.array(np_counts(y, p, thresholds, np.repeat(w, 2)))
    tp, fp, tn, fn = total
    np.testing.assert_allclose(prec.result(), div(tp, tp + fp), rtol=1e-5)
    np.testing.assert_allclose(rec.result(), div(tp, tp + fn), rtol=1e-5)


def test_evenly_spaced_thresholds_count_like_the_comparison():
    # [0, 0.5, 1] is counted by bucketing; predictions exactly at 0 and 0.5 included.
    y = np.array([1, 0, 1, 1, 0, 0, 1])
    p = np.array([0.0, 0.0, 0.5, 0.51, 0.5, 1.0, 1.0])
    counts = [metrics.TruePositives(thresholds=[0.0, 0.5, 1.0]),
              metrics.FalsePositives(thresholds=[0.0, 0.5, 1.0]),
              metrics.TrueNegatives(thresholds=[0.0, 0.5, 1.0]),
              metrics.FalseNegatives(thresholds=[0.0, 0.5, 1.0])]
    for m in counts:
        m.update_state(y, p)
    expected = np_counts(y, p, [0.0, 0.5, 1.0])
    for m, e in zip(counts, expected):
        np.testing.assert_allclose(m.result(), e)


def test_top_k_and_class_id():
    y = np.array([[0, 0, 1, 1], [0, 1, 0, 1]])
    p = np.array([[0.1, 0.4, 0.2, 0.3], [0.35, 0.3, 0.2, 0.15]])
    top2 = metrics.Precision(top_k=2)
    top2.update_state(y, p)
    # Top-2 of row 0: classes 1, 3 (one right); of row 1: classes 0, 1 (one right).
    np.testing.assert_allclose(top2.result(), 2 / 4)
    rec = metrics.Recall(class_id=3)
    rec.update_state(y, p)
    np.testing.assert_allclose(rec.result(), 0.0)   # 0.3 and 0.15 are below 0.5
    rec = metrics.Recall(class_id=3, thresholds=0.2)
    rec.update_state(y, p)
    np.testing.assert_allclose(rec.result(), 0.5)


def test_auc_small_exact_case():
    # 4 points: ROC area is the fraction of (pos, neg) pairs ranked right = 3/4.
    auc = metrics.AUC()
    auc.update_state([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    np.testing.assert_allclose(auc.result(), 0.75, rtol=1e-6)


@pytest.mark.parametrize("curve", ["ROC", "PR"])
@pytest.mark.parametrize("method", ["interpolation", "minoring", "majoring"])
def test_auc_matches_numpy_rule(curve, method):
    n = 30
    auc = metrics.AUC(num_thresholds=n, curve=curve, summation_method=method)
    ys, ps, ws = [], [], []
    for _ in range(3):
        y = rng.integers(0, 2, size=16)
        p = np.clip(0.3 * y + rng.uniform(size=16) * 0.7, 0, 1).astype(np.float32)
        w = rng.uniform(0.2, 2.0, size=16).astype(np.float32)
        auc.update_state(y, p, sample_weight=w)
        ys.append(y), ps.append(p), ws.append(w)
    counts = np_counts(
        np.concatenate(ys), np.concatenate(ps), auc_thresholds(n), np.concatenate(ws)
    )
    np.testing.assert_allclose(auc.result(), np_auc(*counts, curve, method), rtol=1e-5, atol=1e-6)


def test_auc_explicit_uneven_thresholds_and_from_logits():
    thresholds = [0.1, 0.35, 0.4, 0.9]
    y = rng.integers(0, 2, size=20)
    z = rng.normal(size=20).astype(np.float32)
    auc = metrics.AUC(thresholds=thresholds, from_logits=True, curve="PR")
    auc.update_state(y, z)
    counts = np_counts(y, 1 / (1 + np.exp(-z.astype(np.float64))), [-EPS] + thresholds + [1 + EPS])
    np.testing.assert_allclose(auc.result(), np_auc(*counts, "PR", "interpolation"), rtol=1e-5)
    assert auc.get_config()["thresholds"] == thresholds


def test_auc_approaches_exact_roc_area():
    y = rng.integers(0, 2, size=400)
    p = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1).astype(np.float32)
    pos, neg = p[y == 1][:, None], p[y == 0][None, :]
    exact = (pos > neg).mean() + 0.5 * (pos == neg).mean()
    auc = metrics.AUC(num_thresholds=2000)
    auc.update_state(y, p)
    np.testing.assert_allclose(auc.result(), exact, atol=2e-3)


def test_auc_multi_label_and_label_weights():
    n = 20
    y = rng.integers(0, 2, size=(12, 3))
    p = rng.uniform(size=(12, 3)).astype(np.float32)
    per_label = [np_auc(*np_counts(y[:, j], p[:, j], auc_thresholds(n)), "ROC", "interpolation")
                 for j in range(3)]
    auc = metrics.AUC(num_thresholds=n, multi_label=True)
    auc.update_state(y, p)
    assert auc.true_positives.shape == (n, 3)
    np.testing.assert_allclose(auc.result(), np.mean(per_label), rtol=1e-5)
    lw = np.array([1.0, 0.0, 3.0])
    weighted = metrics.AUC(num_thresholds=n, multi_label=True, num_labels=3, label_weights=lw)
    weighted.update_state(y, p)
    np.testing.assert_allclose(weighted.result(), (per_label[0] + 3 * per_label[2]) / 4, rtol=1e-5)
    # Without multi_label, label weights weight the pooled counts.
    pooled = metrics.AUC(num_thresholds=n, label_weights=lw)
    pooled.update_state(y, p)
    counts = np_counts(y, p, auc_thresholds(n), np.broadcast_to(lw, y.shape))
    np.testing.assert_allclose(pooled.result(), np_auc(*counts, "ROC", "interpolation"), rtol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        metrics.Precision(thresholds=[0.5, 1.5])
    with pytest.raises(ValueError, match="curve"):
        metrics.AUC(curve="DET")
    with pytest.raises(ValueError, match="num_thresholds"):
        metrics.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match=r"\(3,\).*\(3, 2\)"):
        metrics.Precision().update_state(np.zeros(3), np.zeros((3, 2)))


def test_multi_label_auc_without_num_labels_runs_in_a_compiled_fit():
    # compile sizes the per-label state from the output shape before tracing.
    import loopax
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = (rng.uniform(size=(32, 3)) > 0.5).astype(np.float32)
    model = loopax.Sequential([loopax.Input((4,)), loopax.layers.Dense(3, activation="sigmoid")])
    model.compile(optimizer=loopax.optimizers.SGD(0.0), loss="binary_crossentropy",
                  metrics=[metrics.AUC(multi_label=True)], jit_compile=True)
    logged = model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False).history["auc"][0]
    direct = metrics.AUC(multi_label=True)
    direct.update_state(y, model.predict(x, verbose=0))
    np.testing.assert_allclose(logged, direct.result(), rtol=1e-5)
