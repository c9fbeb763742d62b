"""timeseries_dataset_from_array: windows, targets, batching and shuffling as
Keras documents them (Keras's own version needs TensorFlow), and fit() on it."""

import numpy as np
import pytest

import loopax


def expected_windows(data, targets, length, stride, rate, start, end):
    """The windows Keras's docstring defines, written out with loops."""
    end = len(data) if end is None else end
    windows, window_targets, p = [], [], start
    while p + (length - 1) * rate < end and (targets is None or p - start < len(targets)):
        windows.append([data[p + k * rate] for k in range(length)])
        if targets is not None:
            window_targets.append(targets[p])
        p += stride
    return np.array(windows), np.array(window_targets)


def all_batches(dataset):
    xs, ys = zip(*list(dataset))
    return np.concatenate(xs), np.concatenate(ys)


@pytest.mark.parametrize("length,stride,rate,start,end", [
    (10, 1, 2, None, None),
    (5, 3, 1, None, None),
    (4, 2, 3, 7, 90),
    (1, 1, 1, None, None),
], ids=["docstring-example", "stride-3", "start-end-rate-3", "length-1"])
def test_windows_and_targets_match_the_documented_definition(length, stride, rate, start, end):
    data = np.arange(100) * 10
    targets = np.arange(100) + 1000
    ds = loopax.utils.timeseries_dataset_from_array(
        data, targets, sequence_length=length, sequence_stride=stride, sampling_rate=rate,
        batch_size=7, start_index=start, end_index=end)
    x, y = all_batches(ds)
    want_x, want_y = expected_windows(data, targets, length, stride, rate, start or 0, end)
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(y, want_y)
    assert len(ds) == -(-len(want_x) // 7)
    assert all(b[0].shape[0] == 7 for b in list(ds)[:-1])


def test_keras_docstring_examples():
    # "data = [0, 1, ... 99], sequence_length=10, sampling_rate=2 ... the dataset will
    # yield batches of sequences composed of [0, 2, 4, 6, 8, 10, 12, 14, 16, 18], ..."
    ds = loopax.utils.timeseries_dataset_from_array(np.arange(100), None, 10, sampling_rate=2,
                                                    batch_size=100)
    (batch,) = list(ds)
    np.testing.assert_array_equal(batch[0], np.arange(0, 20, 2))
    np.testing.assert_array_equal(batch[1], np.arange(1, 21, 2))
    assert batch.shape == (82, 10)
    # "Use data[:-10] as input, data[10:] as target, sequence_length=10": x[0] = data[:10],
    # y[0] = data[10].
    data = np.arange(100)
    ds = loopax.utils.timeseries_dataset_from_array(data[:-10], data[10:], 10)
    x, y = ds[0]
    np.testing.assert_array_equal(x[0], data[:10])
    assert y[0] == 10 and x.shape == (81, 10)


def test_multivariate_data_and_no_targets():
    data = np.random.default_rng(0).normal(size=(30, 3)).astype("float32")
    ds = loopax.preprocessing.timeseries_dataset_from_array(data, None, 4, batch_size=8)
    first = ds[0]
    assert first.shape == (8, 4, 3)
    np.testing.assert_array_equal(first[5], data[5:9])


def test_shuffle_with_a_seed_is_a_reproducible_permutation():
    data, targets = np.arange(50), np.arange(50)

    def windows(seed):
        ds = loopax.utils.timeseries_dataset_from_array(data, targets, 5, batch_size=4,
                                                        shuffle=True, seed=seed)
        return all_batches(ds)
    x1, y1 = windows(3)
    x2, _ = windows(3)
    x3, _ = windows(4)
    np.testing.assert_array_equal(x1, x2)
    assert not np.array_equal(x1, x3)
    np.testing.assert_array_equal(x1[:, 0], y1)          # targets follow their windows
    np.testing.assert_array_equal(np.sort(x1[:, 0]), np.arange(46))   # every window once
    assert not np.array_equal(x1[:, 0], np.arange(46))


@pytest.mark.parametrize("kwargs,match", [
    (dict(start_index=-1), "start_index"),
    (dict(start_index=20), "start_index"),
    (dict(end_index=20), "end_index"),
    (dict(start_index=5, end_index=4), "end_index"),
    (dict(sampling_rate=0), "sampling_rate"),
    (dict(sequence_stride=0), "sequence_stride"),
], ids=["negative-start", "start-past-end", "end-at-length", "end-before-start",
        "rate-0", "stride-0"])
def test_bad_arguments_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        loopax.utils.timeseries_dataset_from_array(np.arange(20), None, 3, **kwargs)


def test_fit_takes_the_dataset_directly():
    t = np.linspace(0, 20, 300).astype("float32")
    series = np.sin(t)[:, None]
    ds = loopax.utils.timeseries_dataset_from_array(series[:-8], series[8:], 8, batch_size=32)
    model = loopax.Sequential([loopax.Input((8, 1)), loopax.layers.Flatten(),
                               loopax.layers.Dense(1)])
    model.compile("adam", "mse")
    history = model.fit(ds, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()
