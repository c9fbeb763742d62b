"""`loopax.losses.get`, `resolve`, configs."""

import numpy as np
import pytest

from loopax import losses
from loopax.src import losses as src_losses


@pytest.mark.parametrize("name, expected", [
    ("mse", losses.mean_squared_error), ("MSE", losses.mean_squared_error),
    ("mean_squared_error", losses.mean_squared_error), ("mae", losses.mean_absolute_error),
    ("huber", losses.huber), ("kld", losses.kl_divergence), ("kl_divergence", losses.kl_divergence),
    ("categorical_crossentropy", losses.categorical_crossentropy),
    ("sparse_categorical_crossentropy", losses.sparse_categorical_crossentropy),
    ("binary_crossentropy", losses.binary_crossentropy), ("bce", losses.binary_crossentropy),
    ("log_cosh", losses.log_cosh), ("logcosh", losses.log_cosh),
])
def test_get_function_names(name, expected):
    assert losses.get(name) is expected


def test_get_classes_instances_and_callables():
    assert isinstance(losses.get("MeanSquaredError"), losses.MeanSquaredError)
    assert isinstance(losses.get(losses.Huber), losses.Huber)
    loss = losses.CategoricalCrossentropy(from_logits=True)
    assert losses.get(loss) is loss

    def custom(y_true, y_pred):
        return y_pred - y_true

    assert losses.get(custom) is custom
    assert losses.get(None) is None


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as e:
        losses.get("categorical_crossentropyy")
    msg = str(e.value)
    assert "'categorical_crossentropy'" in msg          # the close match
    assert "mean_squared_error" in msg and "Huber" in msg  # the valid names
    with pytest.raises(ValueError, match="subclass"):
        losses.get(dict)


def test_config_round_trip():
    loss = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, name="cce",
                                          reduction="sum")
    config = loss.get_config()
    assert config == {"name": "cce", "reduction": "sum", "dtype": "float32", "from_logits": True,
                      "label_smoothing": 0.1, "axis": -1}
    clone = losses.CategoricalCrossentropy.from_config(config)
    y, z = np.eye(3)[[0, 2]], np.array([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]])
    np.testing.assert_allclose(clone(y, z), loss(y, z))
    again = losses.deserialize(losses.serialize(losses.Huber(delta=2.0)))
    assert isinstance(again, losses.Huber) and again.get_config()["delta"] == 2.0
    wrapped = src_losses.LossFunctionWrapper(losses.mae, name="l1")
    clone = src_losses.LossFunctionWrapper.from_config(wrapped.get_config())
    assert clone.fn is losses.mean_absolute_error and clone.name == "l1"


def test_resolve_for_compile():
    mse = src_losses.resolve("mse")
    assert isinstance(mse, losses.Loss) and mse.name == "mse"
    np.testing.assert_allclose(mse(np.zeros((2, 1)), np.ones((2, 1))), 1.0)
    # "crossentropy" picks binary / sparse / categorical from the shapes.
    assert src_losses.resolve("ce", (8, 1), (8, 1)).fn is losses.binary_crossentropy
    assert src_losses.resolve("ce", (8,), (8, 5)).fn is losses.sparse_categorical_crossentropy
    assert src_losses.resolve("ce", (8, 1), (8, 5)).fn is losses.sparse_categorical_crossentropy
    assert src_losses.resolve("crossentropy", (8, 5), (8, 5)).fn is losses.categorical_crossentropy
    obj = losses.Hinge()
    assert src_losses.resolve(obj) is obj
    # A wrapped element-wise function weighs (batch,) outputs sample by sample.
    y, p, w = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 0.0]), np.array([1.0, 2.0, 0.5])
    np.testing.assert_allclose(mse(y, p, sample_weight=w), (1 + 0 + 2) / 3)
    custom = src_losses.resolve(lambda t, p: (t - p) ** 2)
    np.testing.assert_allclose(custom(y, p, sample_weight=w), (1 + 0 + 2) / 3)
