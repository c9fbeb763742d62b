"""loopax.losses.CTC / ctc against keras.losses (Keras 3 on JAX)."""



import jax
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

rng = np.random.default_rng(5)


def batch():
    """Softmax outputs (as a model ending in softmax gives) and 0-padded labels,
    one of them empty."""
    y_pred = np.asarray(jax.nn.softmax(rng.normal(size=(3, 10, 5)) * 2)).astype("float32")
    y_true = rng.integers(1, 5, size=(3, 4)).astype("int32")
    y_true[1, 2:] = 0
    y_true[2] = 0
    return y_true, y_pred


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "mean", None])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "sample-weight"])
def test_ctc_class_matches_keras(reduction, weighted):
    y_true, y_pred = batch()
    weight = np.array([1.0, 0.5, 2.0], "float32") if weighted else None
    ours = loopax.losses.CTC(reduction=reduction)(y_true, y_pred, sample_weight=weight)
    theirs = keras.losses.CTC(reduction=reduction)(y_true, y_pred, sample_weight=weight)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-5)


def test_ctc_function_matches_keras_and_round_trips():
    y_true, y_pred = batch()
    np.testing.assert_allclose(np.asarray(loopax.losses.ctc(y_true, y_pred)),
                               np.asarray(keras.losses.ctc(y_true, y_pred)), rtol=1e-5)
    loss = loopax.losses.CTC(reduction="sum", name="seq")
    restored = loopax.losses.CTC.from_config(loss.get_config())
    assert (restored.name, restored.reduction) == ("seq", "sum")
    assert isinstance(loopax.losses.get("CTC"), loopax.losses.CTC)
    assert loopax.losses.get("ctc") is loopax.losses.ctc
    again = loopax.losses.deserialize(loopax.losses.serialize(loss))
    assert isinstance(again, loopax.losses.CTC) and again.reduction == "sum"


def test_ctc_bad_shapes():
    y_true, y_pred = batch()
    with pytest.raises(ValueError, match=r"ctc: `y_true` must be \(batch, max_label_length\)"):
        loopax.losses.ctc(y_true[:, :, None], y_pred)
    with pytest.raises(ValueError, match=r"ctc: `y_pred` must be \(batch, max_time"):
        loopax.losses.CTC()(y_true, y_pred[:, 0])
