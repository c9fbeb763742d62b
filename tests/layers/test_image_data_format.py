"""`config.set_image_data_format`: layers and ops given `data_format=None` follow
it, as Keras's do under `keras.config.set_image_data_format`."""

import inspect

import jax
import numpy as np
import pytest

import loopax
from loopax import layers, ops

keras = pytest.importorskip("keras")


@pytest.fixture
def channels_first():
    """Both libraries default to channels_first for the test, then back."""
    for lib in (loopax, keras):
        lib.config.set_image_data_format("channels_first")
    yield
    for lib in (loopax, keras):
        lib.config.set_image_data_format("channels_last")


def test_set_image_data_format_as_keras():
    assert loopax.config.image_data_format() == "channels_last"
    loopax.config.set_image_data_format("Channels_First")
    assert loopax.config.image_data_format() == loopax.backend.image_data_format() \
        == "channels_first"
    loopax.backend.set_image_data_format("channels_last")
    assert loopax.config.image_data_format() == "channels_last"
    with pytest.raises(ValueError, match="set_image_data_format: `data_format` must be "
                                         "'channels_last' or 'channels_first', got 'NHWC'"):
        loopax.config.set_image_data_format("NHWC")
    assert loopax.config.image_data_format() == "channels_last"


# Values for the required constructor arguments of the layers that take `data_format`
# (Keras's pooling layers need a pool_size too).
REQUIRED = {"filters": 2, "kernel_size": 3, "height": 4, "width": 4, "factor": 0.2,
            "height_factor": 0.2, "width_factor": 0.2, "rate": 0.2, "output_size": 2,
            "pool_size": 2, "max_number": 3}
WITH_DATA_FORMAT = sorted(
    name for name in dir(layers) if isinstance(getattr(layers, name), type)
    and "data_format" in inspect.signature(getattr(layers, name).__init__).parameters)


# Layers whose `factor` means something else (Keras refuses 0.2 for them too).
OVERRIDES = {"RandomPosterization": {"factor": 4}}


def _construct(cls):
    params = inspect.signature(cls.__init__).parameters
    values = {**REQUIRED, **OVERRIDES.get(cls.__name__, {})}
    return cls(**{p: v for p, v in values.items() if p in params})


@pytest.mark.parametrize("name", WITH_DATA_FORMAT)
def test_every_layer_with_a_data_format_follows_the_global_one(name, channels_first):
    ours, theirs = _construct(getattr(layers, name)), _construct(getattr(keras.layers, name))
    assert ours.data_format == theirs.data_format == "channels_first"
    assert ours.get_config()["data_format"] == "channels_first"
    loopax.config.set_image_data_format("channels_last")
    assert ours.data_format == "channels_first"   # read when the layer is created


def test_layers_compute_channels_first_by_default_as_keras(channels_first):
    x = np.random.default_rng(0).normal(size=(2, 3, 6, 5)).astype("float32")
    for name, kwargs in [("Conv2D", dict(filters=2, kernel_size=3)),
                         ("MaxPooling2D", dict(pool_size=2)),
                         ("AdaptiveAveragePooling2D", dict(output_size=(4, 3))),
                         ("GlobalAveragePooling2D", {}),
                         ("CenterCrop", dict(height=4, width=3))]:
        theirs, ours = getattr(keras.layers, name)(**kwargs), getattr(layers, name)(**kwargs)
        theirs.build(x.shape)
        ours.build(x.shape)
        want = jax.jit(theirs)(x)
        ours.set_weights([np.asarray(w.value) for w in theirs.weights])
        np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(want), rtol=1e-5,
                                   atol=1e-5, err_msg=name)


def test_ops_read_the_global_format_when_called():
    x = np.random.default_rng(1).normal(size=(1, 2, 6, 4)).astype("float32")
    assert ops.max_pool(x, 2).shape == (1, 1, 3, 4)           # channels_last: (6, 4) -> ...
    for lib in (loopax, keras):
        lib.config.set_image_data_format("channels_first")
    # The same compiled op, called again: the layout is not cached from the first call.
    # (Keras 3.15's max_pool fails channels-first without explicit strides.)
    for ours, theirs in [(ops.max_pool(x, 2), keras.ops.max_pool(x, 2, strides=2)),
                         (ops.adaptive_average_pool(x, 3), keras.ops.adaptive_average_pool(x, 3)),
                         (ops.image.resize(x, (3, 2)), keras.ops.image.resize(x, (3, 2))),
                         (ops.conv(x, np.ones((3, 3, 2, 1), "float32")),
                          keras.ops.conv(x, np.ones((3, 3, 2, 1), "float32")))]:
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-5)
    assert ops.depth_to_space(np.zeros((1, 2, 2, 4)), 2).shape == (1, 4, 4, 1)  # Keras: fixed
