"""`model.summary()` of a model not built yet prints as Keras 3 does (layers with
"?" shapes and "0 (unbuilt)" parameters) instead of raising."""


import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")


def table_cells(lib, make):
    """Each table row's cells (stripped) and the totals lines of `make(lib).summary()`."""
    text = []
    make(lib).summary(print_fn=lambda line, **_: text.append(line))
    lines = "\n".join(text).splitlines()
    rows = [[c.strip() for c in l.split("│")[1:-1]] for l in lines if l.startswith("│")]
    totals = [l.strip() for l in lines if "params:" in l]
    return rows, totals


def unbuilt_sequential(lib):
    return lib.Sequential([lib.layers.Dense(4, name="d1"), lib.layers.Dense(2, name="d2")],
                          name="seq")


def empty_sequential(lib):
    return lib.Sequential(name="empty")


def half_built_sequential(lib):
    """A layer built by an earlier call elsewhere, then put in an unbuilt Sequential."""
    built = lib.layers.Dense(3, name="built")
    built(np.ones((1, 2), "float32"))
    return lib.Sequential([built, lib.layers.Dense(2, name="unbuilt")], name="half")


def unbuilt_subclassed(lib):
    class Net(lib.Model):
        def __init__(self):
            super().__init__(name="net")
            self.dense = lib.layers.Dense(3, name="dense")

        def call(self, x):
            return self.dense(x)
    return Net()


@pytest.mark.parametrize("make", [unbuilt_sequential, empty_sequential, half_built_sequential,
                                  unbuilt_subclassed], ids=lambda f: f.__name__)
def test_summary_of_an_unbuilt_model_prints_as_keras(make):
    assert table_cells(loopax, make) == table_cells(keras, make)
