"""`Dataset.window` (+ `flat_map(lambda w: w.batch(n))`) and `Dataset.list_files`; the
expected values are what TensorFlow 2.21 gives for the same calls."""

import os

import numpy as np
import pytest

import loopax.tf as tf


def _batched(windows):
    return [[int(x) for x in w] for w in windows.flat_map(lambda w: w.batch(10))]


@pytest.mark.parametrize("kwargs,expected", [
    (dict(size=3), [[0, 1, 2], [3, 4, 5], [6]]),
    (dict(size=3, drop_remainder=True), [[0, 1, 2], [3, 4, 5]]),
    (dict(size=3, shift=1), [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6],
                             [6]]),
    (dict(size=3, shift=2, drop_remainder=True), [[0, 1, 2], [2, 3, 4], [4, 5, 6]]),
    (dict(size=3, shift=1, stride=2), [[0, 2, 4], [1, 3, 5], [2, 4, 6], [3, 5], [4, 6], [5],
                                       [6]]),
    (dict(size=2, shift=3, stride=2), [[0, 2], [3, 5], [6]]),
    (dict(size=3, shift=5), [[0, 1, 2], [5, 6]]),
], ids=["size", "drop_remainder", "shift_1", "shift_2_drop", "stride_2", "shift_3_stride_2",
        "shift_past_size"])
def test_window_then_flat_map_batch_as_tensorflow(kwargs, expected):
    assert _batched(tf.data.Dataset.range(7).window(**kwargs)) == expected


def test_window_cardinality_as_tensorflow():
    r = tf.data.Dataset.range(7)
    assert [int(r.window(3).cardinality()), int(r.window(3, drop_remainder=True).cardinality()),
            int(r.window(3, shift=1, drop_remainder=True).cardinality())] == [3, 2, 5]
    assert int(r.window(9, drop_remainder=True).cardinality()) == 0
    assert _batched(r.window(9, drop_remainder=True)) == []


def test_windows_are_datasets_and_keep_the_element_structure():
    window = next(iter(tf.data.Dataset.range(7).window(3)))
    assert isinstance(window, tf.data.Dataset)
    assert tuple(window.element_spec.shape) == ()
    pairs = tf.data.Dataset.zip((tf.data.Dataset.range(5),
                                 tf.data.Dataset.range(5).map(lambda x: x * 10)))
    a, b = next(iter(pairs.window(2, drop_remainder=True)))
    assert [int(x) for x in a] == [0, 1] and [int(x) for x in b] == [0, 10]
    zipped = pairs.window(2, drop_remainder=True).flat_map(
        lambda a, b: tf.data.Dataset.zip((a.batch(2), b.batch(2))))
    assert [(x.numpy().tolist(), y.numpy().tolist()) for x, y in zipped] == \
        [([0, 1], [0, 10]), ([2, 3], [20, 30])]
    columns = tf.data.Dataset.from_tensor_slices({"a": [1, 2, 3], "b": [4, 5, 6]})
    first = next(iter(columns.window(2)))
    assert {k: [int(x) for x in v] for k, v in first.items()} == {"a": [1, 2], "b": [4, 5]}


def test_time_series_windows_of_an_endless_dataset():
    series = (tf.data.Dataset.range(10).window(5, shift=1, drop_remainder=True)
              .flat_map(lambda w: w.batch(5)).map(lambda w: (w[:-1], w[-1])))
    assert [(x.numpy().tolist(), int(y)) for x, y in series.take(2)] == \
        [([0, 1, 2, 3], 4), ([1, 2, 3, 4], 5)]
    endless = tf.data.Dataset.counter().window(4, shift=2).flat_map(lambda w: w.batch(4))
    assert [w.numpy().tolist() for w in endless.take(3)] == \
        [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7]]
    assert int(tf.data.Dataset.counter().window(4).cardinality()) == -1


@pytest.mark.parametrize("argument", ["size", "shift", "stride"])
def test_window_arguments_must_be_positive(argument):
    kwargs = {"size": 2, argument: 0}
    with pytest.raises(ValueError, match=f"window: {argument} must be positive"):
        tf.data.Dataset.range(3).window(**kwargs)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ["b.txt", "a.txt", "c.txt", "sub/d.txt", "x.csv"]:
        (tmp_path / name).write_text("")
    return tmp_path


def test_list_files_without_shuffle_is_sorted(files):
    ds = tf.data.Dataset.list_files(str(files / "*.txt"), shuffle=False)
    assert [x.numpy() for x in ds] == [os.fsencode(files / n) for n in ["a.txt", "b.txt",
                                                                        "c.txt"]]
    assert int(ds.cardinality()) == 3
    assert ds.element_spec.dtype == tf.string and tuple(ds.element_spec.shape) == ()
    ds = tf.data.Dataset.list_files([str(files / "c.txt"), str(files / "*.csv"),
                                     str(files / "sub/*")], shuffle=False)
    assert [x.numpy() for x in ds] == [os.fsencode(files / n) for n in
                                       ["c.txt", "sub/d.txt", "x.csv"]]
    patterns = tf.constant([str(files / "*.csv"), str(files / "a*")])
    assert len(list(tf.data.Dataset.list_files(patterns, shuffle=False))) == 2


def test_list_files_shuffles_each_pass_and_a_seed_repeats_the_first(tmp_path):
    for i in range(10, 30):
        (tmp_path / f"f{i}.txt").write_text("")
    pattern = str(tmp_path / "*.txt")
    ds = tf.data.Dataset.list_files(pattern, seed=42)
    first, second = [x.numpy() for x in ds], [x.numpy() for x in ds]
    # TensorFlow: another order on the second pass; the same paths; the same first
    # order from a new dataset with the same seed.
    assert first != second and sorted(first) == sorted(second)
    assert sorted(first) == [os.fsencode(tmp_path / f"f{i}.txt") for i in range(10, 30)]
    assert [x.numpy() for x in tf.data.Dataset.list_files(pattern, seed=42)] == first
    assert first != sorted(first)


def test_list_files_without_a_match_names_the_pattern(files):
    with pytest.raises(ValueError, match=r"list_files: no files match file_pattern .*\.nope"):
        tf.data.Dataset.list_files(str(files / "*.nope"))


def test_from_tensor_slices_reads_lists_inside_dicts_as_tensors():
    ds = tf.data.Dataset.from_tensor_slices({"a": [1, 2, 3], "b": [4.0, 5.0, 6.0]})
    assert [{k: v.numpy().tolist() for k, v in e.items()} for e in ds] == [
        {"a": 1, "b": 4.0}, {"a": 2, "b": 5.0}, {"a": 3, "b": 6.0}]
    ds = tf.data.Dataset.from_tensor_slices(([1, 2], [[1, 2], [3, 4]]))
    assert [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds] == \
        [(1, [1, 2]), (2, [3, 4])]
    assert np.asarray(next(iter(ds))[1]).shape == (2,)
