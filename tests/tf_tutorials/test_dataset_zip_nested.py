"""`tf.data.Dataset.zip` of a nested structure of datasets, against TF 2.21."""

from __future__ import annotations

import loopax.tf as tf


def test_zip_of_nested_tuples_and_dicts():
    a, b, c = (tf.data.Dataset.range(3), tf.data.Dataset.range(10, 13),
               tf.data.Dataset.range(20, 24))
    zipped = tf.data.Dataset.zip((a, (b, c)))
    # TF 2.21 prints: [(0, (10, 20)), (1, (11, 21)), (2, (12, 22))] 3
    assert [(int(x), (int(y), int(z))) for x, (y, z) in zipped.as_numpy_iterator()] == [
        (0, (10, 20)), (1, (11, 21)), (2, (12, 22))]
    assert len(zipped) == 3
    # TF 2.21 prints: [{'x': 0, 'y': (10, 20)}, {'x': 1, 'y': (11, 21)}, ...]
    as_dicts = list(tf.data.Dataset.zip({"x": a, "y": (b, c)}).as_numpy_iterator())
    assert [(int(e["x"]), tuple(map(int, e["y"]))) for e in as_dicts] == [
        (0, (10, 20)), (1, (11, 21)), (2, (12, 22))]
