"""tensorflow.org's "basic regression" (auto-mpg), as its reader types it: the CSV
replaced by a synthetic table of the same kind (mpg falling with weight and
horsepower), `Normalization` adapted on it, a one-feature and a linear model."""

import numpy as np

SCRIPT = """
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

rng = np.random.default_rng(0)
n = 320
horsepower = rng.uniform(50, 220, n)
weight = 1500 + 12 * horsepower + rng.normal(0, 300, n)
cylinders = np.round(3 + horsepower / 45)
mpg = 46 - 0.11 * horsepower - 0.004 * weight + rng.normal(0, 1.5, n)
features = np.stack([cylinders, horsepower, weight], axis=1)
train_features, test_features = features[:256], features[256:]
train_labels, test_labels = mpg[:256], mpg[256:]

normalizer = tf.keras.layers.Normalization(axis=-1)
normalizer.adapt(np.array(train_features))
print("mean=", " ".join("%.3f" % m for m in normalizer.mean.numpy()[0]))
first = np.array(train_features[:1])
print("normalized=", " ".join("%.4f" % v for v in normalizer(first).numpy()[0]))

tf.random.set_seed(0)
hp = np.array(train_features[:, 1])
horsepower_normalizer = layers.Normalization(input_shape=[1,], axis=None)
horsepower_normalizer.adapt(hp)
horsepower_model = tf.keras.Sequential([horsepower_normalizer, layers.Dense(units=1)])
print("predict_shape=", horsepower_model.predict(hp[:10], verbose=0).shape)
horsepower_model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.1),
                         loss='mean_absolute_error')
history = horsepower_model.fit(train_features[:, 1], train_labels, epochs=60, verbose=0,
                               validation_split=0.2)
print("hp_val_mae= %.3f" % history.history['val_loss'][-1])
test_results = {}
test_results['horsepower_model'] = horsepower_model.evaluate(
    test_features[:, 1], test_labels, verbose=0)
x = tf.linspace(0.0, 250, 251)
y = horsepower_model.predict(x, verbose=0)
print("hp_test_mae= %.3f" % test_results['horsepower_model'], "curve=", y.shape)

linear_model = tf.keras.Sequential([normalizer, layers.Dense(units=1)])
linear_model.predict(train_features[:10], verbose=0)
print("kernel_shape=", linear_model.layers[1].kernel.shape)
linear_model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.1),
                     loss='mean_absolute_error')
linear_model.fit(train_features, train_labels, epochs=60, verbose=0, validation_split=0.2)
print("linear_test_mae= %.3f" % linear_model.evaluate(test_features, test_labels, verbose=0))
"""

# TF 2.21.0 (CPU, /work/tfvenv/bin/python running SCRIPT) printed these MAEs, and the
# same mean= and normalized= lines as loopax; loopax printed 1.240, 1.451, 1.205.
TF_RECORDED = {"hp_val_mae": 1.241, "hp_test_mae": 1.456, "linear_test_mae": 1.220}


def test_keras_regression_runs_with_tf_numbers(tutorial):
    out = tutorial.run_loopax(SCRIPT)
    rng = np.random.default_rng(0)
    n = 320
    horsepower = rng.uniform(50, 220, n)
    weight = 1500 + 12 * horsepower + rng.normal(0, 300, n)
    cylinders = np.round(3 + horsepower / 45)
    train = np.stack([cylinders, horsepower, weight], axis=1)[:256]
    mean = [float(v) for v in out.split("mean=")[1].split("\n")[0].split()]
    np.testing.assert_allclose(mean, train.mean(0), rtol=1e-4)
    normalized = [float(v) for v in out.split("normalized=")[1].split("\n")[0].split()]
    np.testing.assert_allclose(normalized, (train[0] - train.mean(0)) / train.std(0), atol=2e-3)
    assert "predict_shape= (10, 1)" in out and "curve= (251, 1)" in out
    assert "kernel_shape= (3, 1)" in out
    reference = tutorial.run_tensorflow(SCRIPT)
    if reference is not None:
        TF_RECORDED.update({k: tutorial.values(reference, k)[0] for k in TF_RECORDED})
    for key, recorded in TF_RECORDED.items():
        assert abs(tutorial.values(out, key)[0] - recorded) < 0.1, key
