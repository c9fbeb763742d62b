"""A pass's last, partial batch run by the full batches' one-step program (#19):
padded with copies of its rows, the program told how many rows are real. The
user sees the numbers of the unpadded batch (up to the order of float additions)
and one program fewer to compile per pass; a model whose step may mix rows keeps
a program per batch shape, as Keras."""

import sys
import types
from pathlib import Path

import hypothesis
import hypothesis.strategies as st
import numpy as np
import pytest

import loopax
from loopax.src.trainers import padded_batches
from loopax.src.trainers import programs as step_programs
from loopax.src.trainers.compile_utils import CompileLoss
from loopax.src.trainers.pass_kind import PREDICT, TEST, TRAIN
from loopax.src.trainers.trainer import Trainer

layers = loopax.layers
ROWS, BATCH = 45, 8   # 5 full batches and one of 5 rows; validation_split=0.2: 36 + 9


def _data(kind, rng):
    if kind == "tokens":
        return rng.integers(1, 50, (ROWS, 7)), rng.integers(0, 3, ROWS)
    if kind == "images":
        return rng.random((ROWS, 6, 6, 1), dtype=np.float32), rng.integers(0, 3, ROWS)
    x = rng.normal(size=(ROWS, 5)).astype("float32")
    return x, {"value": x[:, :2] * 2.0 + 1.0, "label": rng.integers(0, 3, ROWS)}


def lstm_model():
    return loopax.Sequential([
        loopax.Input((7,), dtype="int32"), layers.Embedding(50, 6),
        layers.LSTM(5, dropout=0.2), layers.Dropout(0.3), layers.Dense(3, activation="softmax")])


def transformer_model():
    inputs = loopax.Input((7,), dtype="int32")
    h = layers.Embedding(50, 8)(inputs)
    attended = layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.1)(h, h)
    h = layers.LayerNormalization()(h + attended)
    h = layers.GlobalAveragePooling1D()(h)
    return loopax.Model(inputs, layers.Dense(3, activation="softmax")(h))


def convnet_model():
    return loopax.Sequential([
        loopax.Input((6, 6, 1)), layers.Conv2D(4, 3, activation="relu"), layers.MaxPooling2D(),
        layers.Flatten(), layers.Dropout(0.5), layers.Dense(3, activation="softmax")])


def two_output_model():
    inputs = loopax.Input((5,))
    h = layers.Dense(8, activation="relu")(inputs)
    return loopax.Model(inputs, {"value": layers.Dense(2, name="value")(h),
                                 "label": layers.Dense(3, name="label")(h)})


CASES = {
    "lstm": (lstm_model, "tokens", dict(loss="sparse_categorical_crossentropy",
                                        metrics=["accuracy"])),
    "transformer": (transformer_model, "tokens", dict(
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy", loopax.metrics.SparseTopKCategoricalAccuracy(k=2)])),
    "convnet": (convnet_model, "images", dict(loss="sparse_categorical_crossentropy",
                                              metrics=["accuracy"])),
    "two outputs": (two_output_model, "table", dict(
        loss={"value": "mse", "label": loopax.losses.SparseCategoricalCrossentropy(
            from_logits=True)},
        loss_weights={"value": 0.5, "label": 1.0},
        metrics={"value": ["mae"], "label": ["accuracy"]},
        weighted_metrics={"label": ["accuracy"]})),
}


def run(case, pad, monkeypatch, weighted=False):
    """fit (2 epochs, validation), evaluate and predict, all with partial batches."""
    monkeypatch.setattr(padded_batches, "PAD_PARTIAL_BATCHES", pad)
    build, data, compile_args = CASES[case]
    loopax.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x, y = _data(data, rng)
    model = build()
    model.compile(optimizer=loopax.optimizers.Adam(0.01), **compile_args)
    weights = rng.random(ROWS).astype("float32") if weighted else None
    history = model.fit(x, y, sample_weight=weights, batch_size=BATCH, epochs=2,
                        validation_split=0.2, verbose=0)
    evaluated = model.evaluate(x, y, sample_weight=weights, batch_size=BATCH, verbose=0,
                               return_dict=True)
    predicted = model.predict(x[:13], batch_size=BATCH, verbose=0)
    return model, (model.get_weights(), history.history, evaluated, predicted)


def programs(model, kind):
    """How many one-step programs `kind`'s passes compiled (by a call or ahead)."""
    counts = model._compiled_steps.program(kind).programs()
    return counts["by_call"] + counts["ahead"]


@pytest.mark.parametrize("case,weighted", [("lstm", False), ("transformer", False),
                                           ("convnet", False), ("two outputs", True)])
def test_padded_and_unpadded_partial_batches_give_the_same_numbers(case, weighted,
                                                                   monkeypatch):
    padded_model, padded = run(case, True, monkeypatch, weighted)
    unpadded_model, unpadded = run(case, False, monkeypatch, weighted)
    # One program per pass kind padded (the full batches'), two unpadded.
    assert [programs(padded_model, kind) for kind in (TRAIN, TEST, PREDICT)] == [1, 1, 1]
    assert [programs(unpadded_model, kind) for kind in (TRAIN, TEST, PREDICT)] == [2, 3, 2]
    (w1, h1, e1, p1), (w0, h0, e0, p0) = padded, unpadded
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert h1.keys() == h0.keys() and e1.keys() == e0.keys()
    for name in h1:
        np.testing.assert_allclose(h1[name], h0[name], rtol=1e-5, err_msg=name)
    for name in e1:
        np.testing.assert_allclose(e1[name], e0[name], rtol=1e-5, err_msg=name)
    for a, b in zip(np.atleast_1d(p1) if not isinstance(p1, dict) else p1.values(),
                    np.atleast_1d(p0) if not isinstance(p0, dict) else p0.values()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_the_padding_weighs_nothing_in_loss_gradient_and_metrics(monkeypatch):
    """9 rows in batches of 8: the second batch is one real row and 7 copies. The
    weights, the loss (the tracker weighs each batch by its real rows) and the
    metric are those of a batch of 8 and a batch of 1, computed by hand."""
    monkeypatch.setattr(padded_batches, "PAD_PARTIAL_BATCHES", True)
    inputs = loopax.Input((2,))
    model = loopax.Model(inputs, layers.Dense(1, kernel_initializer="ones")(inputs))
    model.compile(optimizer=loopax.optimizers.SGD(0.1), loss="mse", metrics=["mae"])
    x = (np.arange(18, dtype="float64").reshape(9, 2) / 10 - 0.5).astype("float32")
    y = np.linspace(-1, 1, 9, dtype="float32")[:, None]
    history = model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    assert programs(model, TRAIN) == 1

    kernel, bias = np.ones(2), 0.0
    losses, errors = [], []
    for rows in (slice(0, 8), slice(8, 9)):
        error = x[rows] @ kernel + bias - y[rows, 0]
        losses.append(np.mean(error ** 2) * len(error))
        errors.extend(np.abs(error))
        kernel = kernel - 0.1 * 2 * x[rows].T @ error / len(error)
        bias = bias - 0.1 * 2 * np.mean(error)
    new_kernel, new_bias = model.get_weights()
    np.testing.assert_allclose(new_kernel[:, 0], kernel, rtol=1e-5)
    np.testing.assert_allclose(new_bias, [bias], rtol=1e-5)
    assert history.history["loss"][0] == pytest.approx(sum(losses) / 9, rel=1e-5)
    assert history.history["mae"][0] == pytest.approx(np.mean(errors), rel=1e-5)


@hypothesis.settings(max_examples=6, deadline=None)
@hypothesis.given(rows=st.integers(9, 30), batch_size=st.sampled_from([4, 7, 8]),
                  weighted=st.booleans())
def test_any_partial_batch_trains_as_unpadded(rows, batch_size, weighted):
    """Any number of rows and batch size (a partial batch of 1 to batch_size - 1
    rows, or none), with or without sample weights: the same weights, history
    and evaluation as the unpadded program's."""
    rng = np.random.default_rng(rows)
    x = rng.normal(size=(rows, 3)).astype("float32")
    y = rng.integers(0, 2, rows)
    weights = rng.random(rows).astype("float32") if weighted else None
    results = []
    with pytest.MonkeyPatch.context() as patch:
        for pad in (True, False):
            patch.setattr(padded_batches, "PAD_PARTIAL_BATCHES", pad)
            loopax.utils.set_random_seed(0)
            inputs = loopax.Input((3,))
            h = layers.Dropout(0.25)(layers.Dense(4, activation="relu")(inputs))
            model = loopax.Model(inputs, layers.Dense(2)(h))
            model.compile(optimizer=loopax.optimizers.Adam(0.05), metrics=["accuracy"],
                          loss=loopax.losses.SparseCategoricalCrossentropy(from_logits=True))
            history = model.fit(x, y, sample_weight=weights, batch_size=batch_size, epochs=2,
                                verbose=0)
            results.append((model.get_weights(), history.history,
                            model.evaluate(x, y, batch_size=batch_size, verbose=0)))
    (w1, h1, e1), (w0, h0, e0) = results
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for name in h0:
        np.testing.assert_allclose(h1[name], h0[name], rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(e1, e0, rtol=1e-5)


class Batches(loopax.utils.PyDataset):
    """45 rows in batches of 8 from the host: the last has 5 rows."""

    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y

    def __len__(self):
        return -(-len(self.x) // BATCH)

    def __getitem__(self, i):
        return self.x[i * BATCH:(i + 1) * BATCH], self.y[i * BATCH:(i + 1) * BATCH]


def test_host_batches_pad_their_partial_batch_too(monkeypatch):
    """Data from the host (a PyDataset; generators and tf.data alike): the smaller
    last batch runs padded through the first batches' program, same numbers."""
    rng = np.random.default_rng(2)
    x, y = rng.integers(1, 50, (ROWS, 7)), rng.integers(0, 3, ROWS)
    results, counts = [], []
    for pad in (True, False):
        monkeypatch.setattr(padded_batches, "PAD_PARTIAL_BATCHES", pad)
        loopax.utils.set_random_seed(0)
        model = lstm_model()
        model.compile(optimizer=loopax.optimizers.Adam(0.01),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        history = model.fit(Batches(x, y), epochs=2, verbose=0)
        evaluated = model.evaluate(Batches(x, y), verbose=0)
        predicted = model.predict(Batches(x, y), verbose=0)
        results.append((model.get_weights(), history.history, evaluated, predicted))
        counts.append([programs(model, kind) for kind in (TRAIN, TEST, PREDICT)])
    assert counts == [[1, 1, 1], [2, 2, 2]]
    (w1, h1, e1, p1), (w0, h0, e0, p0) = results
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for name in h0:
        np.testing.assert_allclose(h1[name], h0[name], rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(e1, e0, rtol=1e-5)
    assert p1.shape == p0.shape == (ROWS, 3)
    np.testing.assert_allclose(p1, p0, rtol=1e-5, atol=1e-6)


class RowMixing(layers.Layer):
    """Subtracts the batch mean: each row's output depends on the others."""

    def call(self, x):
        return x - loopax.ops.mean(x, axis=0, keepdims=True)


def _dense_on(*hidden, compile_args=None, input_dtype="float32"):
    model = loopax.Sequential([loopax.Input((5,), dtype=input_dtype), *hidden, layers.Dense(1)])
    model.compile(**(compile_args or dict(optimizer="sgd", loss="mse")))
    return model


def _batch_normalized():
    return _dense_on(layers.BatchNormalization())


def _overridden_train_step():
    class OwnStep(loopax.Model):
        def train_step(self, state, data):
            return super().train_step(state, data)
    inputs = loopax.Input((5,))
    model = OwnStep(inputs, layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    return model


KEEP_A_PROGRAM_PER_SHAPE = {
    "a custom layer": lambda: _dense_on(RowMixing()),
    "a Lambda layer": lambda: _dense_on(layers.Lambda(lambda x: x * 2)),
    "an op over the batch": lambda: (lambda i: _compiled(loopax.Model(
        i, layers.Dense(1)(loopax.ops.mean(i, axis=0, keepdims=True) + i))))(loopax.Input((5,))),
    "an activity regularizer": lambda: _dense_on(layers.Dense(3, activity_regularizer="l2")),
    "a masking embedding": lambda: _dense_on(layers.Embedding(9, 2, mask_zero=True),
                                             layers.GlobalAveragePooling1D(),
                                             input_dtype="int32"),
    "a loss function of the user's": lambda: _dense_on(compile_args=dict(
        optimizer="sgd", loss=lambda y, p: loopax.ops.mean((y - p) ** 2, axis=-1))),
    "a metric function of the user's": lambda: _dense_on(compile_args=dict(
        optimizer="sgd", loss="mse", metrics=[lambda y, p: loopax.ops.mean(p, axis=-1)])),
    "an overridden train_step": _overridden_train_step,
    "a loss summed along the batch": lambda: _dense_on(compile_args=dict(
        optimizer="sgd", loss=loopax.losses.Dice())),
    "a loss summed along axis 0": lambda: _dense_on(compile_args=dict(
        optimizer="sgd", loss=loopax.losses.Tversky(axis=(0, 1)))),
    "a softmax over the batch": lambda: _dense_on(layers.Softmax(axis=-2)),
    "batch statistics": _batch_normalized,
}


def _compiled(model):
    model.compile(optimizer="sgd", loss="mse")
    return model


@pytest.mark.parametrize("case", list(KEEP_A_PROGRAM_PER_SHAPE))
def test_a_model_that_may_mix_rows_keeps_a_program_per_batch_shape(case):
    model = KEEP_A_PROGRAM_PER_SHAPE[case]()
    x = np.random.default_rng(0).integers(0, 9, (10, 5)).astype("float32")
    model.fit(x, x[:, :1], batch_size=8, epochs=1, verbose=0)   # builds the loss and metrics
    assert padded_batches.why_not_padded(model, TRAIN, Trainer) is not None
    assert programs(model, TRAIN) == 2


def test_batch_statistics_keep_training_unpadded_but_evaluation_padded():
    model = _batch_normalized()
    assert padded_batches.why_not_padded(model, TRAIN, Trainer) is not None
    assert padded_batches.why_not_padded(model, TEST, Trainer) is None
    assert padded_batches.why_not_padded(model, PREDICT, Trainer) is None


@pytest.mark.parametrize("ordered", [False, True])
def test_the_device_gather_pads_like_the_host_gather(ordered):
    """`batch_of` pads with NumPy on CPU and with a compiled gather
    elsewhere: both give the partial batch's rows, then copies of them."""
    data = {"x": np.arange(40, dtype="float32").reshape(10, 4), "y": np.arange(10)}
    order = np.random.default_rng(0).permutation(10).astype("int32") if ordered else None
    host = step_programs.batch_of(data, order, 8, 4, rows=2)
    index = np.array([8, 9, 8, 9])
    rows = index if order is None else order[index]
    np.testing.assert_array_equal(host["x"], data["x"][rows])
    np.testing.assert_array_equal(host["y"], data["y"][rows])
    device = step_programs._take_rows(data, order, np.asarray(index, "int32"))
    for name in data:
        np.testing.assert_array_equal(np.asarray(device[name]), host[name])


def test_axes_along_the_batch_are_seen():
    inputs = loopax.Input((4, 5))
    joined = layers.Concatenate(axis=0)([inputs, inputs])
    by_rows = layers.Concatenate(axis=-2)([inputs, inputs])
    normalized = layers.Softmax(axis=-3)(inputs)
    model = loopax.Model(inputs, [joined, by_rows, normalized])
    found = [padded_batches._acts_along_the_batch(layer) for layer in model.layers[1:]]
    assert found == [True, False, True]


class Scaled(layers.Layer):
    """A custom layer declaring itself row-wise in its own class, nothing else."""

    row_wise = True

    def call(self, x):
        return x * 3.0


class ScaledWithOwnCall(Scaled):
    def call(self, x):   # an override the declaration above does not vouch for
        return x - loopax.ops.mean(x, axis=0, keepdims=True)


def test_a_layer_declaring_row_wise_has_its_partial_batch_padded(monkeypatch):
    """Declaring `row_wise = True` in the layer's class is all it takes: the
    partial batch runs through the full batches' program (one program, not two),
    with the unpadded numbers; a subclass overriding `call` is not row-wise."""
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(10, 5)).astype("float32"), rng.normal(size=(10, 1))
    results = []
    for pad in (True, False):
        monkeypatch.setattr(padded_batches, "PAD_PARTIAL_BATCHES", pad)
        loopax.utils.set_random_seed(0)
        model = _dense_on(Scaled())
        history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
        results.append((model.get_weights(), history.history["loss"]))
        assert programs(model, TRAIN) == (1 if pad else 2)
    (w1, h1), (w0, h0) = results
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h1, h0, rtol=1e-5)
    monkeypatch.setattr(padded_batches, "PAD_PARTIAL_BATCHES", True)
    assert padded_batches.why_not_padded(_dense_on(Scaled()), TRAIN, Trainer) is None
    assert "may mix rows" in padded_batches.why_not_padded(
        _dense_on(ScaledWithOwnCall()), TRAIN, Trainer)


def test_a_row_wise_model_pads():
    for case in CASES:
        model = CASES[case][0]()
        model.compile(optimizer="adam", loss="mse")
        assert padded_batches.why_not_padded(model, TRAIN, Trainer) is None, case


# ---- against Keras 3 --------------------------------------------------------

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keras_parity"))


def test_partial_batches_train_as_keras():
    """An LSTM and attention model, fitted with partial training and validation
    batches, from the same weights: loopax (padded) and Keras agree."""
    keras = pytest.importorskip("keras_reference").keras
    rng = np.random.default_rng(1)
    x, y = rng.integers(1, 50, (ROWS, 7)), rng.integers(0, 3, ROWS)
    results = {}
    for lib in (keras, loopax):
        inputs = lib.Input((7,), dtype="int32")
        h = lib.layers.Embedding(50, 6)(inputs)
        h = lib.layers.LSTM(5, return_sequences=True)(h)
        h = lib.layers.MultiHeadAttention(num_heads=2, key_dim=3)(h, h)
        h = lib.layers.GlobalAveragePooling1D()(h)
        model = lib.Model(inputs, lib.layers.Dense(3, activation="softmax")(h))
        if lib is keras:
            start = [w.copy() for w in model.get_weights()]
        else:
            model.set_weights(start)
        model.compile(optimizer=lib.optimizers.Adam(0.01),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        history = model.fit(x, y, batch_size=BATCH, epochs=2, validation_split=0.2,
                            shuffle=False, verbose=0)
        results[lib] = (model.get_weights(), history.history,
                        model.evaluate(x, y, batch_size=BATCH, verbose=0))
    assert programs(model, TRAIN) == 1
    (w1, h1, e1), (w0, h0, e0) = results[loopax], results[keras]
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    for name in h0:
        np.testing.assert_allclose(h1[name], h0[name], rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(e1, e0, rtol=1e-5)


# ---- the real rows reach every loss and metric as weights and counts -------

def _weighted_two_outputs():
    """Two outputs with per-output sample weights, losses of every scalar
    reduction and loss weights, weighted and unweighted metrics."""
    inputs = loopax.Input((5,))
    h = layers.Dense(8, activation="relu")(inputs)
    model = loopax.Model(inputs, {"value": layers.Dense(2, name="value")(h),
                                  "label": layers.Dense(3, name="label")(h)})
    model.compile(
        optimizer=loopax.optimizers.Adam(0.01),
        loss={"value": loopax.losses.MeanSquaredError(reduction="sum"),
              "label": loopax.losses.SparseCategoricalCrossentropy(
                  from_logits=True, reduction="mean_with_sample_weight")},
        loss_weights={"value": 0.1, "label": 1.0},
        metrics={"value": ["mae"], "label": [
            "accuracy", loopax.metrics.SparseTopKCategoricalAccuracy(k=2)]},
        weighted_metrics={"value": [loopax.metrics.MeanSquaredError()],
                          "label": ["accuracy", loopax.metrics.SparseCategoricalAccuracy()]})
    return model


def _class_weighted():
    model = loopax.Sequential([loopax.Input((5,)), layers.Dense(6, activation="relu"),
                               layers.Dense(3)])
    model.compile(optimizer=loopax.optimizers.Adam(0.01),
                  loss=loopax.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], weighted_metrics=["accuracy"])
    return model


def _run_weighted(case, pad, monkeypatch):
    monkeypatch.setattr(padded_batches, "PAD_PARTIAL_BATCHES", pad)
    loopax.utils.set_random_seed(0)
    rng = np.random.default_rng(5)
    x, y = _data("table", rng)
    weights = rng.random(ROWS).astype("float32")
    if case == "two outputs, weights per output":
        model = _weighted_two_outputs()
        fit = dict(sample_weight={"value": weights, "label": 1.0 - weights})
        evaluated = dict(sample_weight={"value": 1.0 - weights, "label": weights})
    else:
        model, y = _class_weighted(), y["label"]
        fit = dict(class_weight={0: 0.5, 1: 2.0, 2: 1.0})
        evaluated = dict(sample_weight=weights)
    history = model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, **fit)
    return model, (model.get_weights(), history.history, model.evaluate(
        x, y, batch_size=BATCH, verbose=0, return_dict=True, **evaluated))


@pytest.mark.parametrize("case", ["two outputs, weights per output", "class weights"])
def test_weights_reductions_and_counting_metrics_see_only_the_real_rows(case, monkeypatch):
    """Sample weights per output, class weights, "sum" and
    "mean_with_sample_weight" reductions, loss weights, and metrics that sum
    by their weights (weighted MSE and accuracies): padded, the numbers of the
    unpadded batches."""
    padded_model, (w1, h1, e1) = _run_weighted(case, True, monkeypatch)
    unpadded_model, (w0, h0, e0) = _run_weighted(case, False, monkeypatch)
    assert [programs(padded_model, kind) for kind in (TRAIN, TEST)] == [1, 1]
    assert [programs(unpadded_model, kind) for kind in (TRAIN, TEST)] == [2, 2]
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert h1.keys() == h0.keys() and e1.keys() == e0.keys()
    for name in h0:
        np.testing.assert_allclose(h1[name], h0[name], rtol=1e-5, err_msg=name)
    for name in e0:
        np.testing.assert_allclose(e1[name], e0[name], rtol=1e-5, err_msg=name)


def test_the_compiled_loss_counts_the_real_rows_it_is_given():
    """The compiled loss of a batch of 5 real rows padded to 8 with other rows,
    told so by its sample weight (`RealRows`), is the 5 rows' loss, for each
    scalar reduction, against NumPy; the per-output loss trackers count 5 rows."""
    rng = np.random.default_rng(7)
    y, p = rng.normal(size=(8, 3)).astype("float32"), rng.normal(size=(8, 3)).astype("float32")
    w = rng.random(8).astype("float32")
    squared = ((y - p) ** 2).mean(axis=-1)[:5] * w[:5]
    expected = {"sum_over_batch_size": squared.sum() / 5, "sum": squared.sum(),
                "mean_with_sample_weight": squared.sum() / w[:5].sum()}
    for reduction, value in expected.items():
        compiled = CompileLoss(loopax.losses.MeanSquaredError(reduction=reduction),
                               output_names=["out"])
        real = padded_batches.RealRows(w, np.int32(5), 8)
        got = compiled(y, p, sample_weight=real)
        np.testing.assert_allclose(got, value, rtol=1e-6, err_msg=reduction)


def test_a_loss_over_the_whole_batch_gives_its_unpadded_value(monkeypatch):
    """Dice (axis=None) sums over every row: 10 rows in batches of 7 (a partial
    batch of 3) give the loss of the batches as they are, as Keras computes it."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(10, 5)).astype("float32")
    y = (rng.random((10, 2)) > 0.5).astype("float32")
    losses = []
    for pad in (True, False):
        monkeypatch.setattr(padded_batches, "PAD_PARTIAL_BATCHES", pad)
        loopax.utils.set_random_seed(0)
        model = loopax.Sequential([loopax.Input((5,)), layers.Dense(2, activation="sigmoid")])
        model.compile(loss=loopax.losses.Dice())
        losses.append(model.evaluate(x, y, batch_size=7, verbose=0))
    predicted = model.predict(x, verbose=0)
    by_batch = [loopax.losses.dice(y[rows], predicted[rows]) for rows in (slice(0, 7),
                                                                           slice(7, 10))]
    expected = (float(by_batch[0]) * 7 + float(by_batch[1]) * 3) / 10
    np.testing.assert_allclose(losses, [expected, expected], rtol=1e-5)

def test_a_loss_and_metric_without_a_module_train():
    """A function made by exec() without `__name__` in its globals (an embedded
    interpreter, some notebook tools) has `__module__` None: the old check called
    None.startswith and fit raised AttributeError (#34's attacker rerun). It trains
    as the same functions with a module do."""
    scope = {}
    exec("def my_loss(y, p):\n    return (y - p) ** 2\n"
         "def my_metric(y, p):\n    return abs(y - p)\n", scope)
    assert scope["my_loss"].__module__ is None
    x = np.arange(30, dtype="float32").reshape(10, 3) / 30
    y = x.sum(axis=1, keepdims=True)
    results = []
    for module in (None, "user_code"):
        loss, metric = (types.FunctionType(scope[n].__code__, scope, n)
                        for n in ("my_loss", "my_metric"))
        loss.__module__ = metric.__module__ = module
        loopax.utils.set_random_seed(1)
        model = loopax.Sequential([loopax.Input((3,)), loopax.layers.Dense(1)])
        model.compile(optimizer=loopax.optimizers.SGD(0.1), loss=loss, metrics=[metric])
        history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        results.append((model.get_weights(), history.history))
    (weights, history), (want_weights, want_history) = results
    for got, want in zip(weights, want_weights):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert set(history) == {"loss", "my_metric"}
    np.testing.assert_allclose(history["loss"], want_history["loss"], rtol=1e-6)
