"""Module tracking: variables and sub-modules in a documented, stable order."""

import numpy as np

import loopax
from loopax.src.random import SeedGenerator


class Inner(loopax.Module):
    def __init__(self, name=None):
        super().__init__(name)
        self.w = loopax.Variable(1.0, name="w")
        self.stat = loopax.Variable(0.0, trainable=False, name="stat")


class Outer(loopax.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [Inner("a"), Inner("b")]
        self.scale = loopax.Variable(2.0, name="scale")
        self.table = {"x": loopax.Variable(3.0, name="x")}
        self.seed = SeedGenerator(1)
        self.alias = self.scale  # reached twice, listed once


def test_order_own_variables_first_then_submodules():
    m = Outer()
    names = [v.name for v in m.variables]
    assert names == ["scale", "x", "w", "stat", "w", "stat", "seed_generator_state"]
    assert [v.name for v in m.trainable_variables] == ["scale", "x", "w", "w"]
    assert [v.name for v in m.non_trainable_variables] == ["stat", "stat", "seed_generator_state"]
    assert [s.name for s in m.submodules] == ["a", "b"]


def test_freezing_a_submodule_moves_its_variables_to_non_trainable():
    m = Outer()
    m.blocks[0].trainable = False
    assert [v.name for v in m.trainable_variables] == ["scale", "x", "w"]
    assert m.trainable_variables[2] is m.blocks[1].w


def test_seed_003_module_trains_with_assign_sub():
    class Model(loopax.Module):
        def __init__(self):
            super().__init__()
            self.w = loopax.Variable(5.0)
            self.b = loopax.Variable(0.0)

        def __call__(self, x):
            return self.w * x + self.b

    m = Model()
    assert len(m.trainable_variables) == 2
    out = m(np.array([1.0, 2.0], dtype=np.float32))
    np.testing.assert_allclose(np.asarray(out), [5.0, 10.0])
    m.w.assign_sub(1.0)
    assert float(m.w) == 4.0
