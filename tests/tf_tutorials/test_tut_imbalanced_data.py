"""The imbalanced-data tutorial's resampling (tensorflow.org/tutorials/structured_data/
imbalanced_data) with one changed import: `make_ds` with `shuffle(BUFFER_SIZE).repeat()`,
`tf.data.Dataset.sample_from_datasets([pos_ds, neg_ds], weights=[0.5, 0.5])`,
`.batch(...).prefetch(2)`, fit with `steps_per_epoch` and a cached validation Dataset;
plus `tf.data.experimental.Counter` and `choose_from_datasets`.

Expected lines: printed by the same script under TensorFlow 2.21 (/work/tfvenv, with
`import tensorflow as tf` and `from tensorflow import keras`). The tutorial passes
`np.ceil(...)` (a float) as `steps_per_epoch`; TF 2.21's Keras refuses it too
("'numpy.float64' object cannot be interpreted as an integer"), so the script takes `int`.
"""

from __future__ import annotations

SCRIPT = '''
import numpy as np
import loopax.tf as tf
from loopax.tf import keras

# -- an imbalanced binary problem: 1 positive for 9 negatives --------------------------
rng = np.random.RandomState(0)
neg, pos = 450, 50
features = np.concatenate([rng.normal(-1.0, 1.0, (neg, 4)), rng.normal(1.0, 1.0, (pos, 4))])
labels = np.concatenate([np.zeros(neg), np.ones(pos)])
bool_train_labels = labels != 0
pos_features = features[bool_train_labels]
neg_features = features[~bool_train_labels]
pos_labels = labels[bool_train_labels]
neg_labels = labels[~bool_train_labels]
BUFFER_SIZE = 1000
BATCH_SIZE = 64


def make_ds(features, labels):
    ds = tf.data.Dataset.from_tensor_slices((features, labels))  # .cache()
    ds = ds.shuffle(BUFFER_SIZE).repeat()
    return ds


pos_ds = make_ds(pos_features, pos_labels)
neg_ds = make_ds(neg_features, neg_labels)
for features_, label in pos_ds.take(1):
    print("Features_shape:", features_.numpy().shape)
    print("Label:", label.numpy())

resampled_ds = tf.data.Dataset.sample_from_datasets([pos_ds, neg_ds], weights=[0.5, 0.5])
resampled_ds = resampled_ds.batch(BATCH_SIZE).prefetch(2)
means = []
for features_, label in resampled_ds.take(20):
    means.append(label.numpy().mean())
print("resampled_mean_in_range:", 0.35 < np.mean(means) < 0.65)
resampled_steps_per_epoch = int(np.ceil(2.0 * neg / BATCH_SIZE))
print("resampled_steps_per_epoch:", resampled_steps_per_epoch)

counter = tf.data.experimental.Counter()
print("counter:", [int(c) for c in counter.take(3)])
chosen = tf.data.Dataset.choose_from_datasets(
    [tf.data.Dataset.range(3), tf.data.Dataset.range(10, 13)],
    tf.data.Dataset.range(2).repeat(3))
print("chosen:", [int(c) for c in chosen])


def make_model(output_bias=None):
    if output_bias is not None:
        output_bias = tf.keras.initializers.Constant(output_bias)
    model = keras.Sequential([
        keras.layers.Dense(8, activation="relu", input_shape=(4,)),
        keras.layers.Dense(1, activation="sigmoid", bias_initializer=output_bias or "zeros")])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2),
                  loss=keras.losses.BinaryCrossentropy(),
                  metrics=[keras.metrics.BinaryAccuracy(name="accuracy"),
                           keras.metrics.Recall(name="recall")])
    return model


val_ds = tf.data.Dataset.from_tensor_slices((features, labels)).cache()
val_ds = val_ds.batch(BATCH_SIZE).prefetch(2)
resampled_model = make_model()
resampled_model.layers[-1].bias.assign([0])
resampled_history = resampled_model.fit(
    resampled_ds, epochs=3, steps_per_epoch=resampled_steps_per_epoch,
    validation_data=val_ds, verbose=0)
print("epochs:", len(resampled_history.history["loss"]))
print("val_recall_high:", resampled_history.history["val_recall"][-1] > 0.7)
'''

# Printed by SCRIPT under TensorFlow 2.21 (see the module docstring).
TF_PRINTED = {
    "Features_shape": "(4,)",
    "Label": "1.0",
    "resampled_mean_in_range": "True",
    "resampled_steps_per_epoch": "15",
    "counter": "[0, 1, 2]",
    "chosen": "[0, 10, 1, 11, 2, 12]",
    "epochs": "3",
    "val_recall_high": "True",
}


def test_resampling_prints_what_tensorflow_prints(run_tutorial, tmp_path):
    values, _ = run_tutorial(SCRIPT, tmp_path)
    for name, want in TF_PRINTED.items():
        assert values[name] == want, name


def test_same_lines_under_tensorflow(run_tutorial, tmp_path):
    ours, _ = run_tutorial(SCRIPT, tmp_path)
    theirs, _ = run_tutorial(SCRIPT, tmp_path, backend="tensorflow")
    assert ours == theirs
