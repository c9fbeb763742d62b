"""split_dataset: sizes validated and rounded as Keras's own size rule (pure
Python, called here), the seeded shuffle Keras draws (Python's `random`), and
splits that batch and train."""

import random

import numpy as np
import pytest

import loopax


@pytest.fixture(scope="module")
def keras_sizes():
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "jax":
        pytest.skip("Keras must use the JAX backend")
    from keras.src.utils.dataset_utils import _rescale_dataset_split_sizes
    return _rescale_dataset_split_sizes


SIZES = [(0.8, None), (None, 0.25), (3, None), (None, 7), (0.5, 0.3), (2, 5), (0.35, None),
         (0.45, 0.55)]
BAD_SIZES = [(0, None), (10, None), (1.0, None), (0.7, 0.6), (6, 6), ("3", None), (0.01, None)]


@pytest.mark.parametrize("left,right", SIZES, ids=[f"{a}-{b}" for a, b in SIZES])
def test_split_sizes_equal_keras(keras_sizes, left, right):
    x, y = np.arange(10) * 2, np.arange(10) + 100
    a, b = loopax.utils.split_dataset((x, y), left_size=left, right_size=right)
    want_left, want_right = keras_sizes(left, right, 10)
    assert (len(a), len(b)) == (want_left, want_right)
    np.testing.assert_array_equal(np.stack([s[0] for s in a]), x[:want_left])
    np.testing.assert_array_equal(np.stack([s[1] for s in b]), y[10 - want_right:])


@pytest.mark.parametrize("left,right", BAD_SIZES, ids=[f"{a}-{b}" for a, b in BAD_SIZES])
def test_bad_sizes_fail_as_in_keras(keras_sizes, left, right):
    with pytest.raises((ValueError, TypeError)) as keras_error:
        keras_sizes(left, right, 10)
    with pytest.raises(keras_error.type, match="size"):
        loopax.utils.split_dataset(np.arange(10), left_size=left, right_size=right)


def test_no_size_and_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="left_size"):
        loopax.utils.split_dataset(np.arange(10))
    with pytest.raises(ValueError, match="same length"):
        loopax.utils.split_dataset((np.arange(10), np.arange(9)), left_size=0.5)
    with pytest.raises(TypeError, match="dataset"):
        loopax.utils.split_dataset(object(), left_size=0.5)


def test_seeded_shuffle_is_python_random_with_the_seed():
    x = np.arange(20)
    left, right = loopax.utils.split_dataset(x, left_size=0.7, shuffle=True, seed=42)
    order = list(range(20))
    random.Random(42).shuffle(order)   # Keras: random.seed(seed); random.shuffle(samples)
    np.testing.assert_array_equal([s for s in left], x[order[:14]])
    np.testing.assert_array_equal([s for s in right], x[order[14:]])


def test_dict_input_and_batched_dataset_input():
    data = {"a": np.arange(12), "b": np.arange(12) * 10}
    left, right = loopax.utils.split_dataset(data, right_size=4)
    assert right[0] == {"a": 8, "b": 80}
    ts = loopax.utils.timeseries_dataset_from_array(np.arange(40), np.arange(40), 3,
                                                    batch_size=5)
    left, right = loopax.utils.split_dataset(ts, left_size=30)
    assert left.batch_size == 5 and len(left) == 6 and len(right) == 2   # 38 windows: 30 + 8
    x, y = right[0]
    np.testing.assert_array_equal(x[0], [30, 31, 32])
    assert y[0] == 30


def test_splits_batch_and_train():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5]], "float32")
    train, val = loopax.utils.split_dataset((x, y), left_size=0.75, shuffle=True, seed=1)
    train, val = train.batch(16), val.batch(16)
    assert len(train) == 3 and len(val) == 1
    model = loopax.Sequential([loopax.Input((3,)), loopax.layers.Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(train, validation_data=val, epochs=2, verbose=0)
    assert np.isfinite(history.history["val_loss"]).all()
