"""TF-style step overrides under fit (seed 001): `train_step(self, data)` with a
GradientTape, `compiled_loss`, `optimizer.apply_gradients` and
`compiled_metrics`, fused and compiled like the stateless steps."""

import numpy as np
import pytest

import loopax as keras

GradientTape = keras.GradientTape


class CustomModel(keras.Model):
    def train_step(self, data):
        x, y = data
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


class StatelessTwin(keras.Model):
    """The same training through the default (stateless) train_step."""


def _build(cls):
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(8,))
    outputs = keras.layers.Dense(1)(inputs)
    model = cls(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return model


@pytest.mark.skipif(GradientTape is None, reason="GradientTape not available")
@pytest.mark.parametrize("run_eagerly", [False, True])
def test_seed_001_custom_model_trains_like_the_default_step(run_eagerly):
    rng = np.random.default_rng(0)
    x = rng.random((64, 8)).astype("float32")
    y = rng.random((64, 1)).astype("float32")
    tf_style = _build(CustomModel)
    twin = _build(StatelessTwin)
    twin.set_weights(tf_style.get_weights())
    tf_style.run_eagerly = run_eagerly
    keras.utils.set_random_seed(5)
    history = tf_style.fit(x, y, batch_size=16, epochs=2, verbose=0)
    keras.utils.set_random_seed(5)
    expected = twin.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert sorted(history.history) == ["loss", "mae"]
    np.testing.assert_allclose(history.history["loss"], expected.history["loss"], rtol=1e-5)
    np.testing.assert_allclose(history.history["mae"], expected.history["mae"], rtol=1e-5)
    for a, b in zip(tf_style.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
