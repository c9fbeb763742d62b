"""`loopax.tf.data.Dataset` (loopax/src/data/dataset.py): the sources and
transformations issue 36 added, each compared with TensorFlow 2.21's output (printed
by /work/tfvenv/bin/python running the statement in the comment beside it, with
`import tensorflow as tf`), and the one dataset type the data utilities return."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import loopax
import loopax.tf as tf


def values(ds):
    return [np.asarray(v).tolist() for v in ds.as_numpy_iterator()]


def test_from_generator_checks_and_casts_to_the_signature():
    def gen():
        for i in range(3):
            yield i, [i] * 2
    # list(...as_numpy_iterator()) -> [(0, [0., 0.]), (1, [1., 1.]), (2, [2., 2.])],
    # element_spec (TensorSpec((), tf.int32), TensorSpec((None,), tf.float32))
    ds = tf.data.Dataset.from_generator(gen, output_signature=(
        tf.TensorSpec((), tf.int32), tf.TensorSpec((None,), tf.float32)))
    got = list(ds.as_numpy_iterator())
    assert [(int(a), b.tolist()) for a, b in got] == [(0, [0.0, 0.0]), (1, [1.0, 1.0]),
                                                      (2, [2.0, 2.0])]
    assert got[0][1].dtype == np.float32
    assert repr(ds.element_spec) == ("(TensorSpec(shape=(), dtype=tf.int32, name=None), "
                                     "TensorSpec(shape=(None,), dtype=tf.float32, name=None))")
    legacy = tf.data.Dataset.from_generator(gen, output_types=(tf.int32, tf.float32),
                                            output_shapes=((), (None,)))
    assert [int(a) for a, _ in legacy.as_numpy_iterator()] == [0, 1, 2]
    # TF: TypeError "`generator` yielded an element of shape (2,) where an element of
    # shape (3,) was expected."
    bad = tf.data.Dataset.from_generator(gen, output_signature=(
        tf.TensorSpec((), tf.int32), tf.TensorSpec((3,), tf.float32)))
    with pytest.raises(TypeError, match=r"shape \(2,\) where an element of shape \(3,\)"):
        list(bad)
    with pytest.raises(TypeError, match="output_signature"):
        tf.data.Dataset.from_generator(gen)


def test_counter_choose_interleave_padded_batch_as_tensorflow():
    # list(tf.data.experimental.Counter(start=2, step=3).take(3)...) -> [2, 5, 8]
    assert values(tf.data.experimental.Counter(start=2, step=3).take(3)) == [2, 5, 8]
    assert int(tf.data.Dataset.counter().cardinality()) == -1
    # choose_from_datasets([range(0, 3), range(10, 13)], from_tensor_slices([0, 1, 1, 0]))
    # -> [0, 10, 11, 1]
    chosen = tf.data.Dataset.choose_from_datasets(
        [tf.data.Dataset.range(0, 3), tf.data.Dataset.range(10, 13)],
        tf.data.Dataset.from_tensor_slices(np.array([0, 1, 1, 0])))
    assert values(chosen) == [0, 10, 11, 1]
    # range(1, 4).interleave(lambda x: from_tensors(x).repeat(3), cycle_length=2,
    # block_length=2) -> [1, 1, 2, 2, 1, 2, 3, 3, 3]
    inter = tf.data.Dataset.range(1, 4).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(3), cycle_length=2, block_length=2)
    assert values(inter) == [1, 1, 2, 2, 1, 2, 3, 3, 3]
    # range(1, 4).map(lambda x: tf.fill([x], x)).padded_batch(2) -> [[1, 0], [2, 2]], [[3, 3, 3]]
    padded = tf.data.Dataset.range(1, 4).map(lambda x: tf.fill([x], x)).padded_batch(2)
    assert values(padded) == [[[1, 0], [2, 2]], [[3, 3, 3]]]
    # shard(3, 1) of range(10) -> [1, 4, 7]; reduce -> 10; flat_map -> [0, 0, 1];
    # take_while(x < 3) -> [0, 1, 2]
    assert values(tf.data.Dataset.range(10).shard(3, 1)) == [1, 4, 7]
    assert int(tf.data.Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)) == 10
    assert values(tf.data.Dataset.range(3).flat_map(lambda x: tf.data.Dataset.range(x))) == [
        0, 0, 1]
    assert values(tf.data.Dataset.range(10).take_while(lambda x: x < 3)) == [0, 1, 2]


def test_sample_from_datasets_draws_by_weight_and_uses_every_element():
    # TF: sorted(sample_from_datasets([range(3), range(10, 12)], seed=1)) ->
    # [0, 1, 2, 10, 11]; cardinality -2 (finite inputs), -1 (infinite inputs)
    finite = tf.data.Dataset.sample_from_datasets(
        [tf.data.Dataset.range(3), tf.data.Dataset.range(10, 12)], seed=1)
    assert sorted(values(finite)) == [0, 1, 2, 10, 11]
    assert int(finite.cardinality()) == -2
    ones, zeros = (tf.data.Dataset.from_tensors(np.float32(v)).repeat() for v in (1, 0))
    mixed = tf.data.Dataset.sample_from_datasets([ones, zeros], weights=[0.8, 0.2], seed=3)
    assert int(mixed.cardinality()) == -1
    share = np.mean(values(mixed.take(2000)))
    assert abs(share - 0.8) < 0.03   # binomial sd 0.009
    assert values(mixed.take(50)) == values(mixed.take(50))   # a seed repeats its draws
    stop = tf.data.Dataset.sample_from_datasets(
        [tf.data.Dataset.range(2), tf.data.Dataset.range(10, 100)], seed=0,
        stop_on_empty_dataset=True)
    assert len(values(stop)) < 92


def test_cache_runs_map_once(tmp_path):
    calls = []
    ds = tf.data.Dataset.range(4).map(lambda x: calls.append(1) or x * 2).cache()
    assert values(ds) == values(ds) == [0, 2, 4, 6]
    assert len(calls) == 4


def test_text_line_dataset_reads_lines_as_tensorflow(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"first line\r\nsecond\n\nlast no newline")
    # list(tf.data.TextLineDataset("a.txt").as_numpy_iterator()) ->
    # [b'first line', b'second', b'', b'last no newline']
    want = [b"first line", b"second", b"", b"last no newline"]
    assert list(tf.data.TextLineDataset(str(path)).as_numpy_iterator()) == want
    zipped = tmp_path / "a.txt.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    assert list(tf.data.TextLineDataset([str(zipped)], compression_type="GZIP")
                .as_numpy_iterator()) == want
    lines = tf.data.TextLineDataset(str(path)).map(tf.strings.upper)
    assert next(iter(lines)).numpy() == b"FIRST LINE"


# ---- the data utilities return it -------------------------------------------------------


def test_timeseries_windows_are_a_dataset_of_tensors():
    # Issue 38 item 6: the weather example's `inputs.numpy().shape`.
    data = np.arange(40, dtype="float32").reshape(20, 2)
    ds = loopax.utils.timeseries_dataset_from_array(data, data[:, 0], sequence_length=4,
                                                    batch_size=5)
    assert isinstance(ds, tf.data.Dataset) and int(ds.cardinality()) == 4
    for inputs, targets in ds.take(1):
        assert inputs.numpy().shape == (5, 4, 2) and targets.numpy().shape == (5,)
        np.testing.assert_array_equal(inputs.numpy()[1], data[1:5])
    mapped = ds.map(lambda x, y: (x * 2, y)).unbatch().batch(17)
    x, y = next(iter(mapped))
    np.testing.assert_array_equal(x.numpy()[16], 2 * data[16:20])


def test_split_dataset_of_a_dataset_rebatches_as_keras():
    ds = tf.data.Dataset.from_tensor_slices((np.arange(10), np.arange(10) * 10)).batch(4)
    left, right = loopax.utils.split_dataset(ds, left_size=0.6)
    assert isinstance(left, tf.data.Dataset)
    assert [x.numpy().tolist() for x, _ in left] == [[0, 1, 2, 3], [4, 5]]
    assert [y.numpy().tolist() for _, y in right] == [[60, 70, 80, 90]]


def test_fit_reads_a_transformed_dataset_as_the_same_arrays():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(48, 3)).astype("float32"), rng.normal(size=(48, 1)).astype("float32")

    def trained(data, **kwargs):
        loopax.random.set_random_seed(0)
        model = loopax.Sequential([loopax.Input((3,)), loopax.layers.Dense(1)])
        model.compile("sgd", "mse")
        return model.fit(data, epochs=2, verbose=0, **kwargs).history["loss"]
    calls = []
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8).map(
        lambda a, b: calls.append(1) or (a, b)).cache()
    np.testing.assert_allclose(trained(ds), trained(x, y=y, batch_size=8, shuffle=False),
                               rtol=1e-6)
    # six batches mapped once (and the first once more, when fit looks at it before
    # training): the second epoch reads the cache
    assert len(calls) == 7


def test_int64_values_that_int32_wraps_warn():
    """JAX (x64 off) keeps int64 data as int32: 2**40 became 0 without a word, so a sparse
    label 2**40 trained as class 0 through tf.data (#34's attacker rerun); TensorFlow
    keeps the int64 value."""
    import warnings

    import loopax.tf as tf
    labels = np.array([0, 1, 2**40, 2], np.int64)
    with pytest.warns(UserWarning, match=r"holds 1099511627776, which the int32 array"):
        list(tf.data.Dataset.from_tensor_slices(labels).batch(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [np.asarray(b) for b in tf.data.Dataset.from_tensor_slices(
            np.array([0, 1, 2**31 - 1, -2**31], np.int64)).batch(2)]
    np.testing.assert_array_equal(np.concatenate(got), [0, 1, 2**31 - 1, -2**31])
