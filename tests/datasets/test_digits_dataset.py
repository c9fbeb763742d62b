"""The shipped 8×8 digits."""

import numpy as np

import loopax


def test_shapes_dtypes_and_labels():
    (x_train, y_train), (x_test, y_test) = loopax.datasets.digits.load_data()
    assert x_train.shape == (1438, 8, 8) and x_test.shape == (359, 8, 8)
    assert x_train.dtype == np.uint8 and y_train.shape == (1438,)
    y = np.concatenate([y_train, y_test])
    # The UCI test set's class counts (digits 0..9).
    np.testing.assert_array_equal(
        np.bincount(y), [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    )
    assert x_train.min() == 0 and max(x_train.max(), x_test.max()) == 16


def test_file_order_first_image_and_seeded_split():
    (x, y), (x_empty, _) = loopax.datasets.digits.load_data(test_split=0.0, seed=None)
    assert len(x) == 1797 and len(x_empty) == 0
    # The first image of the UCI file is a 0.
    assert y[0] == 0 and x[0, 0].tolist() == [0, 0, 5, 13, 9, 1, 0, 0]
    first = loopax.datasets.digits.load_data(test_split=0.5, seed=7)
    again = loopax.datasets.digits.load_data(test_split=0.5, seed=7)
    np.testing.assert_array_equal(first[0][1], again[0][1])
    assert len(first[1][1]) == 898   # round(1797 * 0.5)
