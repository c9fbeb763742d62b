"""The text classification tutorial (tensorflow.org/tutorials/keras/text_classification)
as a new user runs it with one changed import, on a small folder of .txt reviews the
script writes: `text_dataset_from_directory` with a validation split, `.take(1)` batches
of bytes, `class_names`, a `custom_standardization` of `tf.strings.lower` and
`tf.strings.regex_replace` inside `TextVectorization`, `adapt` on `ds.map(lambda x, y: x)`,
`ds.map(vectorize_text).cache().prefetch(AUTOTUNE)`, then fit and evaluate.

The expected lines were printed by the same script under TensorFlow 2.21 (the
`/work/tfvenv` side environment: the script with `import tensorflow as tf` and
`from tensorflow.keras import layers, losses`, run with WORKDIR set to a fresh folder).
"""

from __future__ import annotations

SCRIPT = '''
import os
import re
import string

import numpy as np
import loopax.tf as tf
from loopax.tf.keras import layers, losses

# -- the data: a folder of reviews, one .txt file each, in pos/ and neg/ --------------
root = os.path.join(WORKDIR, "reviews")
words = {"pos": ["great", "wonderful", "loved", "fun"], "neg": ["awful", "boring", "hated", "dull"]}
rng = np.random.RandomState(0)
for split, n in (("train", 24), ("test", 8)):
    for label in ("neg", "pos"):
        os.makedirs(os.path.join(root, split, label), exist_ok=True)
        for i in range(n):
            chosen = [words[label][j] for j in rng.randint(0, 4, size=3)]
            text = f"The Movie was {chosen[0]}!<br />Really, {chosen[1]} and {chosen[2]}."
            with open(os.path.join(root, split, label, f"{i}.txt"), "w") as f:
                f.write(text)

batch_size = 8
seed = 42
raw_train_ds = tf.keras.utils.text_dataset_from_directory(
    os.path.join(root, "train"), batch_size=batch_size, validation_split=0.25,
    subset="training", seed=seed)
raw_val_ds = tf.keras.utils.text_dataset_from_directory(
    os.path.join(root, "train"), batch_size=batch_size, validation_split=0.25,
    subset="validation", seed=seed)
raw_test_ds = tf.keras.utils.text_dataset_from_directory(
    os.path.join(root, "test"), batch_size=batch_size)

for text_batch, label_batch in raw_train_ds.take(1):
    print("first_batch_shapes:", text_batch.shape[0], label_batch.shape[0])
    print("first_review_type:", int(isinstance(text_batch.numpy()[0], bytes)))
print("Label 0 corresponds to", raw_train_ds.class_names[0])
print("Label 1 corresponds to", raw_train_ds.class_names[1])
print("cardinality:", int(raw_train_ds.cardinality()), int(raw_val_ds.cardinality()),
      int(raw_test_ds.cardinality()))


def custom_standardization(input_data):
    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
    return tf.strings.regex_replace(stripped_html, "[%s]" % re.escape(string.punctuation), "")


max_features = 20
sequence_length = 10
vectorize_layer = layers.TextVectorization(
    standardize=custom_standardization, max_tokens=max_features, output_mode="int",
    output_sequence_length=sequence_length)
train_text = raw_train_ds.map(lambda x, y: x)
vectorize_layer.adapt(train_text)
print("vocabulary_size:", vectorize_layer.vocabulary_size())


def vectorize_text(text, label):
    text = tf.expand_dims(text, -1)
    return vectorize_layer(text), label


sentence = tf.constant("The movie was GREAT!<br />Really, dull and fun.")
print("standardized:", custom_standardization(sentence).numpy())
vectorized, _ = vectorize_text(sentence, 1)
tokens = [vectorize_layer.get_vocabulary()[int(i)] for i in np.asarray(vectorized)[0]]
print("tokens:", tokens)

train_ds = raw_train_ds.map(vectorize_text)
val_ds = raw_val_ds.map(vectorize_text)
test_ds = raw_test_ds.map(vectorize_text)
AUTOTUNE = tf.data.AUTOTUNE
train_ds = train_ds.cache().prefetch(buffer_size=AUTOTUNE)
val_ds = val_ds.cache().prefetch(buffer_size=AUTOTUNE)
test_ds = test_ds.cache().prefetch(buffer_size=AUTOTUNE)

embedding_dim = 8
model = tf.keras.Sequential([
    layers.Embedding(max_features, embedding_dim),
    layers.Dropout(0.2),
    layers.GlobalAveragePooling1D(),
    layers.Dropout(0.2),
    layers.Dense(1, activation="sigmoid")])
model.compile(loss=losses.BinaryCrossentropy(), optimizer=tf.keras.optimizers.Adam(0.05),
              metrics=[tf.metrics.BinaryAccuracy(threshold=0.5)])
history = model.fit(train_ds, validation_data=val_ds, epochs=15, verbose=0)
loss, accuracy = model.evaluate(test_ds, verbose=0)
print("test_accuracy:", accuracy)
print("history_keys:", sorted(history.history))
'''

# Printed by SCRIPT under TensorFlow 2.21 (see the module docstring).
TF_PRINTED = {
    "first_batch_shapes": "8 8",
    "first_review_type": "1",
    "cardinality": "5 2 2",
    "vocabulary_size": "15",
    "standardized": "b'the movie was great really dull and fun'",
    "history_keys": "['binary_accuracy', 'loss', 'val_binary_accuracy', 'val_loss']",
}
TF_TEXT = ("Found 48 files belonging to 2 classes.", "Using 36 files for training.",
           "Using 12 files for validation.", "Found 16 files belonging to 2 classes.",
           "Label 0 corresponds to neg", "Label 1 corresponds to pos")
TF_TOKENS = ["the", "movie", "was", "great", "really", "dull", "and", "fun", "", ""]


def test_text_classification_pipeline_prints_what_tensorflow_prints(run_tutorial, tmp_path):
    values, text = run_tutorial(SCRIPT, tmp_path)
    for name, want in TF_PRINTED.items():
        assert values[name] == want, name
    for line in TF_TEXT:
        assert line in text
    assert eval(values["tokens"]) == TF_TOKENS  # a printed list of str
    # The classes are separable by their words: TF reached 1.0 on the test folder.
    assert float(values["test_accuracy"]) >= 0.85


def test_same_lines_under_tensorflow(run_tutorial, tmp_path):
    ours, _ = run_tutorial(SCRIPT, tmp_path / "loopax")
    theirs, _ = run_tutorial(SCRIPT, tmp_path / "tf", backend="tensorflow")
    for name in TF_PRINTED:
        assert ours[name] == theirs[name], name
