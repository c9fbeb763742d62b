"""`keras.utils.Sequence` is Keras 3's name for PyDataset (Keras 2 code subclasses it)."""

import numpy as np
import pytest

import loopax


def test_sequence_is_pydataset_as_in_keras():
    keras = pytest.importorskip("keras")
    assert keras.utils.Sequence is keras.utils.PyDataset
    assert loopax.utils.Sequence is loopax.utils.PyDataset


def test_a_keras_2_style_sequence_trains():
    class Batches(loopax.utils.Sequence):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            x = np.full((8, 1), i, "float32")
            return x, 3 * x

    model = loopax.Sequential([loopax.Input((1,)), loopax.layers.Dense(1, use_bias=False)])
    model.compile(optimizer=loopax.optimizers.SGD(0.01), loss="mse")
    history = model.fit(Batches(), epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
