"""A user's layer built by calling its `build` directly, as Keras users do
before `set_weights` (`layer.build((None, 784)); layer.set_weights(...)`):
Keras marks the layer built once `build` returns, so its first call neither
builds it again nor replaces the sub-layers and weights it holds. Compared
with Keras 3 on the same layer code and weights."""

import keras_reference  # noqa: F401  (skips the module without Keras)
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")


def projection_layer(library, builds):
    """A layer whose `build` creates a sub-layer and a weight, without calling
    `super().build` (as most user layers do); each build is recorded."""

    class Projection(library.layers.Layer):
        def build(self, input_shape):
            builds.append(tuple(input_shape))
            self.inner = library.layers.Dense(3)
            self.inner.build(input_shape)
            self.scale = self.add_weight(shape=(3,), initializer="ones")

        def call(self, x):
            return self.inner(x) * self.scale

    return Projection()


@pytest.mark.parametrize("library", [keras, loopax], ids=["keras", "loopax"])
def test_explicit_build_marks_the_layer_built(library):
    builds = []
    layer = projection_layer(library, builds)
    layer.build((None, 4))
    assert layer.built
    inner = layer.inner
    layer(np.ones((2, 4), "float32"))
    assert builds == [(None, 4)], "the first call built the layer again"
    assert layer.inner is inner


def test_weights_set_after_explicit_build_are_the_ones_used():
    rng = np.random.default_rng(0)
    # Keras's order: the layer's own weight, then its sub-layer's kernel and bias.
    weights = [rng.standard_normal(3).astype("float32"),
               rng.standard_normal((4, 3)).astype("float32"),
               rng.standard_normal(3).astype("float32")]
    x = rng.standard_normal((5, 4)).astype("float32")
    outputs = {}
    for name, library in (("keras", keras), ("loopax", loopax)):
        layer = projection_layer(library, [])
        layer.build((None, 4))
        layer.set_weights(weights)
        outputs[name] = np.asarray(layer(x))
        # In a model too: trained one step from the weights set.
        inputs = library.Input((4,))
        model = library.Model(inputs, layer(inputs))
        model.compile(optimizer=library.optimizers.SGD(0.1), loss="mse")
        outputs[name + " fit"] = model.fit(x, np.zeros((5, 3), "float32"), batch_size=5,
                                           verbose=0).history["loss"]
    expected = (x @ weights[1] + weights[2]) * weights[0]
    np.testing.assert_allclose(outputs["keras"], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs["loopax"], outputs["keras"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs["loopax fit"], outputs["keras fit"], rtol=1e-5)
