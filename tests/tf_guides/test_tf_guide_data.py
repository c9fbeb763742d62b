"""TensorFlow's tf.data guide (scripts/data_pipeline.py): a small in-memory
`tf.data.Dataset`, checked in closed form, and fed straight to `fit()` (the
training checked against minibatch SGD written out in NumPy)."""

from __future__ import annotations

import numpy as np
import pytest


def _sgd(epochs, lr=0.1, batch=4):
    """Keras's fit on the guide's data: per batch, loss then an SGD step on
    mean((xw + b - y)^2); the epoch's loss is the mean of its batches' losses."""
    x = np.arange(10, dtype=np.float32).reshape(10, 1).astype(np.float64) / 10.0
    y = 3.0 * x + 1.0
    w = b = 0.0
    losses = []
    for _ in range(epochs):
        batch_losses = []
        for start in range(0, 10 - batch + 1, batch):
            xb, yb = x[start:start + batch, 0], y[start:start + batch, 0]
            r = w * xb + b - yb
            batch_losses.append(np.mean(r ** 2))
            w, b = w - lr * np.mean(2 * r * xb), b - lr * np.mean(2 * r)
        losses.append(np.mean(batch_losses))
    return losses, w, b, np.mean((w * x[:, 0] + b - y[:, 0]) ** 2)


def test_dataset_transformations(run_guide):
    printed, _ = run_guide("data_pipeline")
    values = {k: v[0].tolist() for k, v in printed.items()}
    assert values["cardinality"] == [10, 10]
    assert values["batched"] == [4, 4, 2] and values["dropped"] == [4, 4]
    np.testing.assert_allclose(values["mapped"], [1.0, 1.0, 1.0], rtol=1e-6)
    assert values["range"] == [2, 5, 8, 11]
    assert values["skip_repeat"] == [2, 3] * 3
    assert values["zipped"] == [10, 111, 212]
    np.testing.assert_allclose(values["dict_batch"], [1.0, 3.5], rtol=1e-6)
    assert values["filtered"] == [0, 3, 6, 9]


def test_shuffle_is_a_permutation_that_changes_each_epoch(run_guide):
    printed, _ = run_guide("data_pipeline")
    assert printed["shuffle_sorted"][0].tolist() == list(range(20))
    assert printed["shuffle_moved"][0].tolist() == [1]
    assert printed["shuffle_buffer_1"][0].tolist() == list(range(6))   # no room to move
    assert printed["reshuffled"][0].tolist() == [1, 1]


def test_fit_on_a_dataset_matches_numpy_minibatch_sgd(run_guide):
    printed, _ = run_guide("data_pipeline")
    losses, w, b, final_loss = _sgd(3)
    np.testing.assert_allclose(printed["fit_loss"][0], losses, rtol=1e-5)
    np.testing.assert_allclose(printed["fit_weights"][0], [w, b], rtol=1e-5)
    np.testing.assert_allclose(printed["evaluate"][0], [final_loss], rtol=1e-5)
    assert printed["predict_shape"][0].tolist() == [10, 1]
    assert printed["repeat_steps"][0].tolist() == [1]


def test_same_numbers_as_tensorflow(run_guide):
    printed, _ = run_guide("data_pipeline")
    reference, _ = run_guide("data_pipeline", backend="tensorflow")
    for name in ("cardinality", "batched", "dropped", "mapped", "range", "skip_repeat",
                 "zipped", "dict_batch", "filtered", "shuffle_sorted", "fit_loss",
                 "fit_weights", "evaluate", "predict_shape"):
        np.testing.assert_allclose(printed[name], reference[name], rtol=1e-5)


def test_slices_of_unequal_length_are_refused_and_strings_stay_on_the_host():
    import loopax.tf as tf

    with pytest.raises(ValueError, match="same length"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    # Strings are host-side string tensors of UTF-8 bytes (TF 2.21:
    # list(from_tensor_slices(["a", "bé"]).as_numpy_iterator()) == [b'a', b'b\xc3\xa9']).
    strings = tf.data.Dataset.from_tensor_slices(np.array(["a", "bé"]))
    assert list(strings.as_numpy_iterator()) == [b"a", "bé".encode()]
    assert [t.numpy() for t in strings] == [b"a", "bé".encode()]
    with pytest.raises(TypeError, match="infinite"):
        len(tf.data.Dataset.range(3).repeat())
