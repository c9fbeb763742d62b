"""The load_data/numpy tutorial (tensorflow.org/tutorials/load_data/numpy) with one
changed import: NumPy arrays into `from_tensor_slices`, `shuffle(...).batch(...)`, fit
and evaluate. Expected lines printed by the same script under TensorFlow 2.21
(/work/tfvenv, `import tensorflow as tf`); TF's label spec is int64, loopax's int32
(no JAX x64), so only the image spec is compared.
"""

from __future__ import annotations

SCRIPT = '''
import numpy as np
import loopax.tf as tf

# load_data/numpy: arrays (as from mnist.npz) into tf.data, then fit and evaluate
rng = np.random.RandomState(0)
train_examples = rng.rand(96, 6, 6).astype("float32")
train_labels = (train_examples.mean(axis=(1, 2)) > 0.5).astype("int64")
test_examples, test_labels = train_examples[:32], train_labels[:32]

train_dataset = tf.data.Dataset.from_tensor_slices((train_examples, train_labels))
test_dataset = tf.data.Dataset.from_tensor_slices((test_examples, test_labels))
print("element_spec:", train_dataset.element_spec)
BATCH_SIZE = 16
SHUFFLE_BUFFER_SIZE = 100
train_dataset = train_dataset.shuffle(SHUFFLE_BUFFER_SIZE).batch(BATCH_SIZE)
test_dataset = test_dataset.batch(BATCH_SIZE)
print("batches:", int(train_dataset.cardinality()), int(test_dataset.cardinality()))

model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(6, 6)),
    tf.keras.layers.Dense(16, activation="relu"),
    tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.RMSprop(),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["sparse_categorical_accuracy"])
history = model.fit(train_dataset, epochs=4, verbose=0)
print("epochs:", len(history.history["loss"]))
print("evaluated:", len(model.evaluate(test_dataset, verbose=0)))
'''

TF_PRINTED = {"batches": "6 2", "epochs": "4", "evaluated": "2"}


def test_numpy_arrays_through_tf_data_print_what_tensorflow_prints(run_tutorial, tmp_path):
    values, _ = run_tutorial(SCRIPT, tmp_path)
    for name, want in TF_PRINTED.items():
        assert values[name] == want, name
    assert values["element_spec"].startswith(
        "(TensorSpec(shape=(6, 6), dtype=tf.float32, name=None), TensorSpec(shape=(), ")
