"""An eager `metric.result()` is a Tensor, as Keras on TensorFlow gives a tf.Tensor:
Keras-3 code written for the TensorFlow backend calls `.numpy()` on it (keras.io's
"evaluating and exporting scikit-learn metrics in a Keras callback"). It stays an array
for JAX and NumPy, and traced results (compiled steps) are plain JAX values."""

import jax
import jax.numpy as jnp
import numpy as np

import loopax
from loopax import metrics


def test_an_eager_result_has_numpy_and_stays_an_array():
    mean = metrics.Mean()
    mean.update_state([1.0, 2.0, 6.0])
    result = mean.result()
    assert result.numpy() == np.float32(3.0)
    assert float(result) == 3.0
    np.testing.assert_allclose(jnp.sqrt(result), np.sqrt(3.0), rtol=1e-6)
    np.testing.assert_allclose(np.add(result, 1), 4.0)


def test_a_subclass_calling_super_and_dict_results_give_tensors():
    rmse = metrics.RootMeanSquaredError()
    rmse.update_state([1.0, 2.0], [0.0, 0.0])
    np.testing.assert_allclose(rmse.result().numpy(), np.sqrt((1 + 4) / 2), rtol=1e-6)

    class Counts(metrics.Metric):
        def __init__(self):
            super().__init__(name="counts")
            self.seen = self.add_variable((), initializer="zeros", name="seen")

        def update_state(self, values):
            self.seen.assign_add(jnp.asarray(len(values), "float32"))

        def result(self):
            return {"seen": self.seen.value, "twice": 2 * self.seen.value}

    counts = Counts()
    counts.update_state([1, 2, 3])
    assert {k: v.numpy() for k, v in counts.result().items()} == {"seen": 3.0, "twice": 6.0}


def test_traced_results_stay_jax_values():
    mean = metrics.Mean()
    values = mean.stateless_update_state(mean.stateless_reset_state(), jnp.array([2.0, 4.0]))
    seen = []

    def result(values):
        out = mean.stateless_result(values)
        seen.append(type(out))
        return out

    np.testing.assert_allclose(jax.jit(result)(values), 3.0)
    assert issubclass(seen[0], jax.core.Tracer)


def test_fit_logs_and_evaluate_are_numbers_as_before():
    loopax.utils.set_random_seed(0)
    model = loopax.Sequential([loopax.Input((2,)), loopax.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"], run_eagerly=True)
    x, y = np.ones((8, 2), "float32"), np.zeros((8, 1), "float32")
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert all(isinstance(v, float) for values in history.history.values() for v in values)
    assert isinstance(model.evaluate(x, y, verbose=0, return_dict=True)["mae"], float)
