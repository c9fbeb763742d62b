"""The load_data/csv tutorial's idioms (tensorflow.org/tutorials/load_data/csv) with one
changed import: `Dataset.list_files`, `make_csv_dataset` with `label_name`,
`select_columns` and `shuffle_seed`, `CsvDataset` with `record_defaults`, `window` +
`flat_map`, a string `tf.function`, and printed Tensors. `TF_OUTPUT` is what the same
script prints under TensorFlow 2.21 (`import tensorflow as tf`); loopax prints the same.
"""

from __future__ import annotations

SCRIPT = r'''
import os
import tempfile

import numpy as np
import tensorflow as tf

workdir = tempfile.mkdtemp()
rows = ["survived,sex,age,n_siblings_spouses,fare,class"]
rng = np.random.default_rng(0)
for i in range(20):
    rows.append(f"{i % 2},{'male' if i % 3 else 'female'},{20 + i},{i % 4},"
                f"{7.25 + i * 1.5:.2f},{['First', 'Second', 'Third'][i % 3]}")
for part in range(2):
    with open(os.path.join(workdir, f"titanic_{part}.csv"), "w") as f:
        f.write("\n".join([rows[0]] + rows[1 + part * 10: 11 + part * 10]) + "\n")

files = tf.data.Dataset.list_files(os.path.join(workdir, "titanic_*.csv"), shuffle=False)
print("files:", [os.path.basename(f.numpy().decode()) for f in files])

titanic_batches = tf.data.experimental.make_csv_dataset(
    os.path.join(workdir, "titanic_*.csv"), batch_size=4, label_name="survived",
    num_epochs=1, shuffle=False)
for batch, label in titanic_batches.take(2):
    for key, value in batch.items():
        print(f"{key:20s}: {value}")
    print(f"{'label':20s}: {label}")

selected = tf.data.experimental.make_csv_dataset(
    os.path.join(workdir, "titanic_0.csv"), batch_size=5, num_epochs=1, shuffle=False,
    select_columns=["class", "fare", "survived"], label_name="survived")
for features, label in selected.take(1):
    print("selected:", list(features), label.numpy())

first = tf.data.experimental.CsvDataset(
    os.path.join(workdir, "titanic_0.csv"), record_defaults=[0, "", 0.0, 0, 0.0, ""],
    header=True)
for parts in first.take(2):
    print("record:", [p.numpy() for p in parts])

shuffled = tf.data.experimental.make_csv_dataset(
    os.path.join(workdir, "titanic_*.csv"), batch_size=20, num_epochs=1,
    shuffle=True, shuffle_seed=7)
ages = next(iter(shuffled))["age"].numpy()
print("all ages:", sorted(ages.tolist()) == list(range(20, 40)))

series = tf.data.Dataset.range(8).window(4, shift=2, drop_remainder=True)
for w in series.flat_map(lambda w: w.batch(4)):
    print("window:", w.numpy())

@tf.function
def describe(name):
    return tf.strings.join(["class=", tf.strings.upper(name)])
print(describe(tf.constant("third")))
print(tf.constant([1, 2]))
'''

TF_OUTPUT = """files: ['titanic_0.csv', 'titanic_1.csv']
sex                 : [b'female' b'male' b'male' b'female']
age                 : [20 21 22 23]
n_siblings_spouses  : [0 1 2 3]
fare                : [ 7.25  8.75 10.25 11.75]
class               : [b'First' b'Second' b'Third' b'First']
label               : [0 1 0 1]
sex                 : [b'male' b'male' b'female' b'male']
age                 : [24 25 26 27]
n_siblings_spouses  : [0 1 2 3]
fare                : [13.25 14.75 16.25 17.75]
class               : [b'Second' b'Third' b'First' b'Second']
label               : [0 1 0 1]
selected: ['fare', 'class'] [0 1 0 1 0]
record: [np.int32(0), b'female', np.float32(20.0), np.int32(0), np.float32(7.25), b'First']
record: [np.int32(1), b'male', np.float32(21.0), np.int32(1), np.float32(8.75), b'Second']
all ages: True
window: [0 1 2 3]
window: [2 3 4 5]
window: [4 5 6 7]
tf.Tensor(b'class=THIRD', shape=(), dtype=string)
tf.Tensor([1 2], shape=(2,), dtype=int32)
"""


def test_load_csv_prints_what_tensorflow_prints(tutorial):
    assert tutorial.run_loopax(SCRIPT) == TF_OUTPUT
    reference = tutorial.run_tensorflow(SCRIPT)
    if reference is not None:
        assert reference == TF_OUTPUT
