"""The Layer base: build, training propagation, losses, stateless_call, symbolic calls."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax.src.layers.layer import InputSpec, Layer


class Affine(Layer):
    def __init__(self, units, **kw):
        super().__init__(**kw)
        self.units = units

    def build(self, shape):
        self.kernel = self.add_weight((shape[-1], self.units), "ones", name="kernel")
        self.count = self.add_weight((), "zeros", trainable=False, name="count")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: shape[-1]})

    def call(self, x, training=False):
        if training:
            self.count.assign(self.count.value + 1.0)
        self.add_loss(jnp.sum(self.kernel.value) * 0.5)
        return x @ self.kernel.value


class Pair(Layer):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.a = Affine(2)
        self.b = Affine(1)

    def call(self, x):  # no `training` argument: it still reaches the sub-layers
        return self.b(self.a(x))


def test_build_names_paths_and_weights():
    layer = Affine(3)
    y = layer(np.ones((2, 4)))
    assert y.shape == (2, 3) and layer.built
    assert [v.path for v in layer.weights] == ["affine/kernel", "affine/count"]
    assert Affine(1).name == "affine_1"


def test_training_propagates_to_sublayers_and_losses_are_per_call():
    p = Pair()
    x = np.ones((1, 3), np.float32)
    p(x, training=True)
    assert float(p.a.count.value) == 1.0 and float(p.b.count.value) == 1.0
    p(x)  # training defaults to the layer's default (False)
    assert float(p.a.count.value) == 1.0
    # kernel sums: a: 3*2 ones, b: 2*1 ones → 0.5*6 + 0.5*2
    assert [float(l) for l in p.losses] == [3.0, 1.0]
    p(x)
    assert len(p.losses) == 2  # not accumulated across calls


def test_stateless_call_returns_updated_non_trainables_and_losses():
    p = Pair()
    x = np.ones((1, 3), np.float32)
    p(x)
    tv = [2.0 * np.ones(v.shape, np.float32) for v in p.trainable_variables]
    ntv = [v.value for v in p.non_trainable_variables]
    out, new_ntv, losses = jax.jit(
        lambda t, n: p.stateless_call(t, n, x, training=True, return_losses=True))(tv, ntv)
    # x @ 2·ones(3,2) = 6 each; then @ 2·ones(2,1) = 24
    np.testing.assert_allclose(np.asarray(out), [[24.0]])
    assert [float(v) for v in new_ntv] == [1.0, 1.0]
    assert [float(l) for l in losses] == [6.0, 2.0]
    assert float(p.a.count.value) == 0.0  # the layer itself is untouched
    np.testing.assert_allclose(p.a.kernel.numpy(), np.ones((3, 2)))


def test_stateless_call_after_assign_matches_call():
    p = Pair()
    x = np.arange(3, dtype=np.float32)[None]
    p(x)
    for v in p.trainable_variables:
        v.assign(np.full(v.shape, 0.5, np.float32))
    out, _ = p.stateless_call([v.value for v in p.trainable_variables],
                              [v.value for v in p.non_trainable_variables], x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(p(x)))


def test_stateless_call_with_wrong_variables_explains_order():
    p = Pair()
    p(np.ones((1, 3)))
    with pytest.raises(
        ValueError, match=r"(?s)has 1 entries but 2 were expected.*affine/kernel.*affine_1/kernel"
    ):
        p.stateless_call([p.a.kernel.value], [], np.ones((1, 3)))


def test_wrong_feature_size_names_layer_and_shapes():
    layer = Affine(2, name="proj")
    layer(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"'proj'.*\(2, 5\).*size 4 on axis -1"):
        layer(np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"'proj'.*\(4,\).*rank >= 2"):
        layer(np.ones((4,)))


def test_symbolic_call_infers_batch_dimension():
    inp = loopax.Input(shape=(4,))
    out = Affine(3)(inp)
    assert out.shape == (None, 3)
    assert out.node.layer.built


def test_unknown_constructor_argument_is_an_error():
    with pytest.raises(TypeError, match="unexpected keyword"):
        Affine(2, unitz=3)


def test_set_weights_lists_each_mismatch():
    layer = Affine(2)
    layer(np.ones((1, 3)))
    with pytest.raises(
        ValueError, match=r"(?s)weight 0 \(affine/kernel\): expected shape \(3, 2\), got \(2, 2\)"
    ):
        layer.set_weights([np.ones((2, 2)), np.zeros(())])


def test_seed_state_is_a_variable_but_not_a_weight():
    drop = loopax.layers.Dropout(0.5, seed=1)
    drop(np.ones((2, 3)), training=True)
    assert drop.weights == [] and drop.count_params() == 0
    assert [v.name for v in drop.non_trainable_variables] == ["seed_generator_state"]
    # ... so a stateless call returns the advanced seed state.
    state = [v.value for v in drop.non_trainable_variables]
    out1, state = drop.stateless_call([], state, np.ones((2, 3)), training=True)
    out2, _ = drop.stateless_call([], state, np.ones((2, 3)), training=True)
    assert not np.array_equal(np.asarray(out1), np.asarray(out2))


# ---- trainable propagates to nested layers and models, as in Keras ---------------

def _nested(lib):
    inner = lib.Sequential([lib.layers.Dense(3, name="d1"),
                            lib.layers.BatchNormalization(name="bn")], name="inner")
    outer = lib.Sequential([inner, lib.layers.Dense(2, name="d2")], name="outer")
    outer.build((None, 4))
    return outer, inner


def _trainable_report(outer, inner):
    """Flags of every layer and the (layer/weight) names in each weight list."""
    def names(weights):
        return ["/".join(w.path.split("/")[-2:]) for w in weights]
    return ([(layer.name, layer.trainable) for layer in [outer, inner, *inner.layers,
                                                            outer.layers[1]]],
            names(outer.trainable_weights), names(outer.non_trainable_weights),
            names(inner.trainable_weights), [w.trainable for w in inner.weights])


def test_nested_trainable_matches_keras():
    import os
    os.environ.setdefault("KERAS_BACKEND", "jax")
    keras = pytest.importorskip("keras")
    ours, theirs = _nested(loopax), _nested(keras)

    def both(action):
        for outer, inner in (ours, theirs):
            action(outer, inner)
        assert _trainable_report(*ours) == _trainable_report(*theirs)

    both(lambda outer, inner: setattr(inner, "trainable", False))
    assert _trainable_report(*ours)[3] == []           # inner has no trainable weights
    assert ("d1", False) in _trainable_report(*ours)[0]
    both(lambda outer, inner: setattr(inner, "trainable", True))
    both(lambda outer, inner: setattr(inner.layers[0], "trainable", False))
    both(lambda outer, inner: setattr(outer, "trainable", False))
    both(lambda outer, inner: setattr(outer, "trainable", True))  # d1 comes back too
