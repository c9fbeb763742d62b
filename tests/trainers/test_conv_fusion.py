"""Convolution programs on CPU: fused executions run as one-step calls where XLA:CPU
would run the loop body's convolutions as naive loop nests (it rewrites them into
Eigen's NHWC/HWIO form only at a program's top level), with the weights of one step
per call, bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import loopax
from loopax.src.trainers.step_loops import has_slow_convolution

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu", reason="an XLA:CPU rule")

NHWC = ("NHWC", "HWIO", "NHWC")


def conv(x, kernel, dimension_numbers=NHWC):
    return lax.conv_general_dilated(x, kernel, (1, 1), "SAME", dimension_numbers=dimension_numbers)


def jaxpr_of(fn, *shapes):
    return jax.make_jaxpr(fn)(*(jnp.zeros(s) for s in shapes))


def test_channels_last_forward_convolutions_are_fine_in_loops():
    assert not has_slow_convolution(jaxpr_of(conv, (2, 5, 5, 3), (3, 3, 3, 4)))


def test_channels_first_convolutions_are_slow_in_loops():
    nchw = lambda x, k: conv(x, k, ("NCHW", "OIHW", "NCHW"))  # noqa: E731
    assert has_slow_convolution(jaxpr_of(nchw, (2, 3, 5, 5), (4, 3, 3, 3)))


def test_a_convolution_gradient_is_slow_in_loops_even_nested_in_a_jit():
    """The gradients' convolutions swap the kernel's feature axes (input gradient)
    and batch and feature axes (kernel gradient): not Eigen's form."""
    loss = jax.jit(lambda x, k: jnp.sum(conv(x, k) ** 2))
    assert has_slow_convolution(jaxpr_of(jax.grad(loss, argnums=(0, 1)), (2, 5, 5, 3),
                                         (3, 3, 3, 4)))


def small_conv_model(steps_per_execution):
    loopax.utils.set_random_seed(0)
    inputs = loopax.Input((6, 6, 1))
    h = loopax.layers.Conv2D(4, 3, padding="same", activation="relu")(inputs)
    outputs = loopax.layers.Conv2D(1, 1)(h)
    model = loopax.Model(inputs, outputs)
    model.compile(optimizer=loopax.optimizers.Adam(0.01), loss="mse",
                  steps_per_execution=steps_per_execution)
    return model


@pytest.mark.parametrize("data", ["arrays", "generator"])
def test_fused_conv_training_gives_the_bits_of_one_step_per_call(data):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6, 6, 1)).astype("float32")

    def source():
        if data == "arrays":
            return dict(x=x, y=x, batch_size=4)
        def batches():
            while True:
                for i in range(0, 32, 4):
                    yield x[i:i + 4], x[i:i + 4]
        return dict(x=batches(), steps_per_epoch=8)

    runs = {}
    for spe in (1, 4):
        model = small_conv_model(spe)
        history = model.fit(**source(), epochs=2, shuffle=False, verbose=0)
        runs[spe] = (model.get_weights(), history.history["loss"])
    for a, b in zip(runs[1][0], runs[4][0], strict=True):
        np.testing.assert_array_equal(a, b)
    assert runs[1][1] == runs[4][1]
