"""`convolution_op`, the hook Keras's conv layers call for the convolution
itself: a subclass that overrides it (or calls it from its own `call`) gives
the outputs Keras 3 gives for the same weights."""

import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

rng = np.random.default_rng(3)


def doubled_kernel_conv(library, base):
    """A conv subclass whose `convolution_op` convolves with twice the kernel."""

    class DoubledKernel(getattr(library.layers, base)):
        def convolution_op(self, inputs, kernel):
            return super().convolution_op(inputs, kernel * 2.0)

    return DoubledKernel


def standardized_call_conv(library):
    """A Conv2D whose own `call` feeds a standardized kernel to `convolution_op`."""
    ops = library.ops

    class StandardizedCall(library.layers.Conv2D):
        def call(self, inputs):
            kernel = ops.convert_to_tensor(self.kernel)
            mean, var = ops.moments(kernel, axes=[0, 1, 2], keepdims=True)
            out = self.convolution_op(inputs, (kernel - mean) / ops.sqrt(var + 1e-10))
            return out + self.bias if self.use_bias else out

    return StandardizedCall


def outputs_of(make_layer, library, x, weights=None):
    layer = make_layer(library)
    y = layer(x)
    if weights is not None:
        layer.set_weights(weights)
        y = layer(x)
    return layer, np.asarray(y)


@pytest.mark.parametrize("base, shape, kwargs", [
    pytest.param("Conv2D", (2, 7, 7, 3), {"strides": 2, "padding": "same"},
                 id="conv2d-strided-same"),
    pytest.param("Conv3D", (1, 5, 5, 5, 2), {}, id="conv3d-valid"),
])
def test_overridden_convolution_op_matches_keras(base, shape, kwargs):
    x = rng.standard_normal(shape).astype("float32")

    def make(library):
        return doubled_kernel_conv(library, base)(4, 3, activation="relu", **kwargs)

    layer, ours = outputs_of(make, loopax, x)
    _, theirs = outputs_of(make, keras, x, [np.asarray(w) for w in layer.get_weights()])
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_call_that_uses_convolution_op_matches_keras():
    x = rng.standard_normal((2, 8, 8, 1)).astype("float32")

    def make(library):
        return standardized_call_conv(library)(5, 3, bias_initializer="ones")

    layer, ours = outputs_of(make, loopax, x)
    _, theirs = outputs_of(make, keras, x, [np.asarray(w) for w in layer.get_weights()])
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def test_convolution_op_alone_is_the_plain_convolution():
    layer = loopax.layers.Conv2D(3, 2, activation="relu", bias_initializer="ones")
    x = rng.standard_normal((1, 4, 4, 2)).astype("float32")
    full = np.asarray(layer(x))
    plain = np.asarray(layer.convolution_op(x, layer.kernel))
    np.testing.assert_allclose(full, np.maximum(plain + 1.0, 0.0), rtol=1e-6, atol=1e-6)
