"""Issue 36 item 7: the directory utilities return `loopax.tf.data.Dataset` (as Keras
returns a tf.data.Dataset): `class_names`/`file_paths` kept, batches iterate as Tensors,
and `map/cache/shuffle/prefetch/take/skip/unbatch/batch/concatenate/zip/repeat/filter`
work on them; fit/evaluate/predict read the underlying batches (resumable)."""

from __future__ import annotations

import numpy as np
import pytest

import loopax
import loopax.tf as tf
from loopax.src.trainers.data_adapters import get_data_adapter


def write_pngs(root, per_class=5, size=(9, 7)):
    pil = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    for name in ("cats", "dogs"):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            pil.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(
                root / name / f"{i}.png")


def test_image_dataset_is_a_tf_data_dataset_of_tensors(tmp_path):
    write_pngs(tmp_path)
    ds = loopax.utils.image_dataset_from_directory(tmp_path, image_size=(8, 8), batch_size=4,
                                                   seed=1, verbose=False)
    assert isinstance(ds, tf.data.Dataset) and ds.class_names == ["cats", "dogs"]
    assert len(ds.file_paths) == 10 and int(ds.cardinality()) == 3
    images, labels = next(iter(ds))
    assert isinstance(images, tf.Tensor) and images.numpy().shape == (4, 8, 8, 3)
    assert labels.numpy().dtype == np.int32
    pipeline = ds.cache().shuffle(1000).prefetch(buffer_size=tf.data.AUTOTUNE)
    rescaled = pipeline.map(lambda x, y: (loopax.layers.Rescaling(1 / 255)(x), y))
    seen = np.concatenate([y.numpy() for _, y in rescaled])
    assert sorted(seen.tolist()) == [0] * 5 + [1] * 5
    assert all(float(tf.reduce_max(x)) <= 1 for x, _ in rescaled)
    assert [len(y) for _, y in ds.unbatch().batch(6)] == [6, 4]
    assert len(list(ds.skip(1).take(1).repeat(2))) == 2
    assert len(list(ds.concatenate(ds))) == 6
    assert len(list(tf.data.Dataset.zip((ds, ds)))) == 3
    assert len(list(ds.unbatch().filter(lambda x, y: y == 1))) == 5


def test_each_pass_is_reshuffled_and_fit_reads_the_batches(tmp_path):
    write_pngs(tmp_path, per_class=8)
    ds = loopax.utils.image_dataset_from_directory(tmp_path, image_size=(4, 4), batch_size=4,
                                                   seed=3, verbose=False)
    orders = [tuple(np.concatenate([y.numpy() for _, y in ds])) for _ in range(4)]
    assert len(set(orders)) > 1 and all(sorted(o) == sorted(orders[0]) for o in orders)
    adapter = get_data_adapter(ds)
    assert adapter.resumable   # the BatchDataset itself, as before the change
    model = loopax.Sequential([loopax.Input((4, 4, 3)), loopax.layers.Flatten(),
                               loopax.layers.Dense(2)])
    model.compile("adam", loopax.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(ds.cache().shuffle(100), validation_data=ds, epochs=2, verbose=0)
    assert len(history.history["val_loss"]) == 2
    assert model.predict(ds, verbose=0).shape == (16, 2)


def test_text_batches_are_string_tensors_of_bytes(tmp_path):
    for name, texts in (("neg", ["bad", "awful film"]), ("pos", ["good", "great fun"])):
        (tmp_path / name).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / name / f"{i}.txt").write_text(text)
    ds = loopax.utils.text_dataset_from_directory(tmp_path, batch_size=4, shuffle=False,
                                                  verbose=False)
    texts, labels = next(iter(ds))
    assert texts.dtype == tf.string
    assert texts.numpy().tolist() == [b"bad", b"awful film", b"good", b"great fun"]
    lowered = ds.map(lambda x, y: (tf.strings.upper(x), y))
    assert next(iter(lowered))[0].numpy()[1] == b"AWFUL FILM"
    assert ds.class_names == ["neg", "pos"] and labels.numpy().tolist() == [0, 0, 1, 1]
