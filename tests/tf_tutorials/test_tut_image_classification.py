"""The image classification tutorial (tensorflow.org/tutorials/images/classification)
with one changed import, on a small folder of PNGs the script writes:
`image_dataset_from_directory` with a validation split, `class_names`, `.take(1)`,
`images[i].numpy().astype("uint8")`, `class_names[labels[i]]`,
`train_ds.cache().shuffle(1000).prefetch(buffer_size=AUTOTUNE)`, a `Rescaling` map,
fit with validation, augmentation layers, `load_img`/`img_to_array`/`tf.expand_dims`
and `tf.nn.softmax` of a prediction.

Expected lines: printed by the same script under TensorFlow 2.21 (/work/tfvenv, the
script with `import tensorflow as tf`, `from tensorflow import keras`,
`from tensorflow.keras...`, WORKDIR a fresh folder). The tutorial's
`np.min(first_image)` (NumPy on a Tensor) is issue 36 item 1's; here `tf.reduce_min`.
"""

from __future__ import annotations

import pytest

pytest.importorskip("PIL")

SCRIPT = '''
import os

import numpy as np
import PIL.Image
import loopax.tf as tf
from loopax.tf import keras
from loopax.tf.keras import layers
from loopax.tf.keras.models import Sequential

# -- the data: a folder of small PNG photos, one sub-folder per class -----------------
data_dir = os.path.join(WORKDIR, "flower_photos")
colors = {"daisy": (230, 230, 60), "roses": (200, 30, 40), "tulips": (60, 60, 220)}
rng = np.random.RandomState(0)
for name, color in colors.items():
    os.makedirs(os.path.join(data_dir, name))
    for i in range(12):
        size = (20 + rng.randint(0, 8), 18 + rng.randint(0, 8))
        pixels = np.clip(np.array(color) + rng.randint(-30, 30, size + (3,)), 0, 255)
        PIL.Image.fromarray(pixels.astype("uint8")).save(os.path.join(data_dir, name,
                                                                     f"{i}.png"))
image_count = len([p for d in colors for p in os.listdir(os.path.join(data_dir, d))])
print("image_count:", image_count)

batch_size = 8
img_height = 16
img_width = 16
train_ds = tf.keras.utils.image_dataset_from_directory(
    data_dir, validation_split=0.25, subset="training", seed=123,
    image_size=(img_height, img_width), batch_size=batch_size)
val_ds = tf.keras.utils.image_dataset_from_directory(
    data_dir, validation_split=0.25, subset="validation", seed=123,
    image_size=(img_height, img_width), batch_size=batch_size)
class_names = train_ds.class_names
print("class_names:", class_names)

for images, labels in train_ds.take(1):
    for i in range(4):
        pixel = images[i].numpy().astype("uint8")
        title = class_names[labels[i]]
print("pixel_dtype:", pixel.dtype, title in class_names)

for image_batch, labels_batch in train_ds:
    print("image_batch:", image_batch.shape)
    print("labels_batch:", labels_batch.shape)
    break

AUTOTUNE = tf.data.AUTOTUNE
train_ds = train_ds.cache().shuffle(1000).prefetch(buffer_size=AUTOTUNE)
val_ds = val_ds.cache().prefetch(buffer_size=AUTOTUNE)

normalization_layer = layers.Rescaling(1. / 255)
normalized_ds = train_ds.map(lambda x, y: (normalization_layer(x), y))
image_batch, labels_batch = next(iter(normalized_ds))
first_image = image_batch[0]
# The tutorial prints np.min(first_image), np.max(first_image); in [0, 1]:
print("in_unit_range:", 0 <= float(tf.reduce_min(first_image)) <= float(
    tf.reduce_max(first_image)) <= 1)
counts = np.zeros(3, int)
for _, labels in normalized_ds:
    counts += np.bincount(labels.numpy(), minlength=3)
print("train_label_counts_sum:", int(counts.sum()))

num_classes = len(class_names)
model = Sequential([
    layers.Rescaling(1. / 255, input_shape=(img_height, img_width, 3)),
    layers.Conv2D(4, 3, padding="same", activation="relu"),
    layers.MaxPooling2D(),
    layers.Flatten(),
    layers.Dense(16, activation="relu"),
    layers.Dense(num_classes)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
epochs = 8
history = model.fit(train_ds, validation_data=val_ds, epochs=epochs, verbose=0)
acc = history.history["accuracy"]
val_acc = history.history["val_accuracy"]
print("epochs_run:", len(acc), len(val_acc))
print("final_val_accuracy:", val_acc[-1])

data_augmentation = keras.Sequential([
    layers.RandomFlip("horizontal", input_shape=(img_height, img_width, 3)),
    layers.RandomRotation(0.1),
    layers.RandomZoom(0.1)])
for images, _ in train_ds.take(1):
    augmented_images = data_augmentation(images)
print("augmented:", tuple(augmented_images.shape[1:]))

rose_path = os.path.join(data_dir, "roses", "0.png")
img = tf.keras.utils.load_img(rose_path, target_size=(img_height, img_width))
img_array = tf.keras.utils.img_to_array(img)
img_array = tf.expand_dims(img_array, 0)  # Create a batch
predictions = model.predict(img_array, verbose=0)
score = tf.nn.softmax(predictions[0])
print("This image most likely belongs to {} with a {:.2f} percent confidence."
      .format(class_names[np.argmax(score.numpy())], 100 * np.max(score.numpy())))
print("predicted:", class_names[np.argmax(score.numpy())])
'''

# Printed by SCRIPT under TensorFlow 2.21 (see the module docstring).
TF_PRINTED = {
    "image_count": "36",
    "class_names": "['daisy', 'roses', 'tulips']",
    "pixel_dtype": "uint8 True",
    "image_batch": "(8, 16, 16, 3)",
    "labels_batch": "(8,)",
    "in_unit_range": "True",
    "train_label_counts_sum": "27",
    "epochs_run": "8 8",
    "augmented": "(16, 16, 3)",
    "predicted": "roses",
}
TF_TEXT = ("Found 36 files belonging to 3 classes.", "Using 27 files for training.",
           "Using 9 files for validation.")


def test_image_classification_pipeline_prints_what_tensorflow_prints(run_tutorial, tmp_path):
    values, text = run_tutorial(SCRIPT, tmp_path)
    for name, want in TF_PRINTED.items():
        assert values[name] == want, name
    for line in TF_TEXT:
        assert line in text
    assert float(values["final_val_accuracy"]) >= 0.75   # TF: 1.0 (three flat colours)


def test_same_lines_under_tensorflow(run_tutorial, tmp_path):
    ours, _ = run_tutorial(SCRIPT, tmp_path / "loopax")
    theirs, _ = run_tutorial(SCRIPT, tmp_path / "tf", backend="tensorflow")
    for name in TF_PRINTED:
        assert ours[name] == theirs[name], name
