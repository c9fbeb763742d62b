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


class WithBackReference(loopax.Module):
    """A Module that refers to another one's state without owning it."""

    _untracked_attributes = loopax.Module._untracked_attributes | {"peer"}

    def __init__(self, peer):
        super().__init__()
        self.peer = peer                       # not owned: declared untracked
        self.own = loopax.Variable(1.0, name="own")


def test_untracked_attributes_are_not_owned():
    peer = Inner("peer")
    m = WithBackReference(peer)
    assert [v.name for v in m.variables] == ["own"]
    assert m.submodules == []
    assert [v.name for v in peer.variables] == ["w", "stat"]


def test_a_metric_owns_the_metrics_it_holds_in_lists_too():
    class Pair(loopax.metrics.Metric):
        def __init__(self):
            super().__init__(name="pair")
            self.count = self.add_variable((), name="count")
            self.parts = [loopax.metrics.Mean(name="a"), loopax.metrics.Sum(name="b")]

        def update_state(self, x):
            self.count.assign_add(1.0)
            for part in self.parts:
                part.update_state(x)

        def result(self):
            return self.parts[0].result() + self.parts[1].result()

    m = Pair()
    assert [v.path for v in m.variables] == ["pair/count", "a/total", "a/count", "b/total"]
    m.update_state(np.array([1.0, 3.0]))
    np.testing.assert_allclose(m.result(), 2.0 + 4.0)
    m.reset_state()
    np.testing.assert_allclose([np.asarray(v.value) for v in m.variables], [0, 0, 0, 0])
