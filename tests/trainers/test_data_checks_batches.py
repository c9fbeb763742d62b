"""Sparse labels are checked in every batch a generator, a PyDataset or a re-iterable
(tf.data-like) object yields, in their own integer type (2**40 refused like 5 and -1),
not only in arrays; a ragged Python list gets an error naming the argument and the fix."""

from __future__ import annotations

import numpy as np
import pytest

import loopax as keras

X = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
BAD_LABELS = {"too-large": 5, "negative": -1, "2**40": 2**40, "-2**40": -2**40}


def classifier(loss="sparse_categorical_crossentropy"):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer="sgd", loss=loss)
    return model


def labels_with(bad, batch):
    """32 int64 labels, class 0 but for `bad` in the given batch of 8."""
    labels = np.zeros(32, "int64")
    labels[batch * 8 + 3] = bad
    return labels


def generator(labels):
    for i in range(4):
        yield X[i * 8:(i + 1) * 8], labels[i * 8:(i + 1) * 8]


class Batches(keras.utils.PyDataset):
    def __init__(self, labels):
        super().__init__()
        self.labels = labels

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return X[i * 8:(i + 1) * 8], self.labels[i * 8:(i + 1) * 8]


class Reiterable:
    """What a tf.data.Dataset looks like to fit(): `__iter__`, no `__next__`."""

    def __init__(self, labels):
        self.labels = labels

    def __iter__(self):
        return generator(self.labels)


SOURCES = {"generator": generator, "PyDataset": Batches, "reiterable": Reiterable}


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("bad", list(BAD_LABELS))
@pytest.mark.parametrize("batch", [0, 2], ids=["first-batch", "third-batch"])
def test_a_bad_label_in_any_batch_is_refused(source, bad, batch):
    model = classifier()
    before = model.get_weights()
    value = BAD_LABELS[bad]
    with pytest.raises(ValueError, match=rf"class indices in \[0, 3\).*e\.g\. {value}\b"):
        model.fit(SOURCES[source](labels_with(value, batch)), epochs=1, shuffle=False,
                  verbose=0)
    if batch == 0:   # refused before any step
        for a, b in zip(before, model.get_weights()):
            np.testing.assert_array_equal(a, b)


def test_bad_labels_in_evaluate_and_validation_batches_are_refused():
    model = classifier()
    with pytest.raises(ValueError, match=r"evaluate\(\).*\[0, 3\).*e\.g\. 1099511627776"):
        model.evaluate(Batches(labels_with(2**40, 1)), verbose=0)
    with pytest.raises(ValueError, match=r"validation data.*\[0, 3\).*e\.g\. 7"):
        model.fit(X, np.zeros(32, "int32"), validation_data=Batches(labels_with(7, 3)),
                  verbose=0)


def test_good_batches_train_as_before():
    labels = np.random.default_rng(1).integers(0, 3, 32)
    model = classifier(keras.losses.SparseCategoricalCrossentropy(ignore_class=-1))
    labels[::5] = -1
    history = model.fit(Batches(labels), epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"])) and len(history.history["loss"]) == 2


def test_check_data_off_skips_the_batch_checks():
    model = classifier()
    model.fit(generator(labels_with(5, 1)), epochs=1, verbose=0, check_data="off")


@pytest.mark.parametrize("argument", ["x", "y"])
def test_a_ragged_list_names_the_argument_and_the_fix(argument):
    ragged = [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0]]
    x, y = (ragged, np.zeros(2, "int32")) if argument == "x" else (X[:2], [[0], [1, 2]])
    with pytest.raises(ValueError, match=rf"`{argument}`.*rows have different lengths.*"
                                         r"np\.array.*pad"):
        classifier().fit(x, y, verbose=0)
