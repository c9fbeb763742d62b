"""ContrastLimitedAdaptiveHistogramEqualization against Keras 3.15.1 itself on the
same images (deterministic layer: whole calls compared), over grid sizes, image sizes
that do not divide into tiles, clip limits, value ranges, channels first and one
image; configs; inference; a compiled call. Tolerance: atol 1e-3 on 0..255 (float32).
"""

import jax
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

NAME = "ContrastLimitedAdaptiveHistogramEqualization"


def _images(shape, seed=0):
    """Random pixels with a low-contrast band (where the clip limit matters)."""
    x = (np.random.default_rng(seed).random(shape) * 255).astype("float32")
    x[:, : shape[1] // 3] = x[:, : shape[1] // 3] * 0.1 + 120
    return x


CASES = [
    pytest.param((2, 16, 16, 3), {}, id="defaults"),
    pytest.param((2, 19, 23, 3), {"tile_grid_size": (3, 4), "clip_limit": 2.0},
                 id="uneven_tiles-clip2"),
    pytest.param((1, 12, 10, 1), {"tile_grid_size": (2, 2), "clip_limit": 0},
                 id="no_clip"),
    pytest.param((2, 12, 14, 3), {"value_range": (0, 1), "tile_grid_size": (2, 3)},
                 id="unit_range"),
    pytest.param((2, 12, 14, 3), {"data_format": "channels_first", "tile_grid_size": (2, 2)},
                 id="channels_first"),
    pytest.param((12, 14, 3), {"tile_grid_size": (3, 3)}, id="one_image"),
]


@pytest.mark.parametrize("shape,kwargs", CASES)
def test_matches_keras(shape, kwargs):
    x = _images(shape)
    if kwargs.get("value_range") == (0, 1):
        x = x / 255
    if kwargs.get("data_format") == "channels_first":
        x = x.transpose(0, 3, 1, 2)
    # Both compiled: one program each, where eagerly each of the ~40 ops compiles for
    # this case's shapes (ours: eager equals compiled, test_config_inference_dicts_and_
    # compiled; Keras's layer is the same jnp ops either way, ~1 s less per case).
    ours = np.asarray(jax.jit(getattr(loopax.layers, NAME)(**kwargs))(x))
    theirs = np.asarray(jax.jit(getattr(keras.layers, NAME)(**kwargs))(x))
    np.testing.assert_allclose(ours, theirs, atol=1e-3)
    assert np.abs(ours - x).max() > 0.01 * (1 if kwargs.get("value_range") else 255)


def test_uniform_tile_without_clip_is_plain_equalization():
    # One tile holding each level 0..15 sixteen times: the equalized level of v is
    # (cdf(v) - cdf_min) * 255 / (n - cdf_min) = v * 17.
    levels = np.repeat(np.arange(16, dtype="float32"), 16).reshape(1, 16, 16, 1)
    # Compiled: one program instead of one per op (eager is checked in
    # test_config_inference_dicts_and_compiled).
    layer = getattr(loopax.layers, NAME)(clip_limit=0, tile_grid_size=(1, 1))
    out = np.asarray(jax.jit(layer)(levels))
    np.testing.assert_allclose(out, levels * 17, atol=1e-3)


def test_config_inference_dicts_and_compiled():
    layer = getattr(loopax.layers, NAME)(value_range=(0, 1), clip_limit=3.0,
                                         tile_grid_size=(2, 4))
    config = layer.get_config()
    keras_config = getattr(keras.layers, NAME)(value_range=(0, 1), clip_limit=3.0,
                                               tile_grid_size=(2, 4)).get_config()
    keys = ("value_range", "clip_limit", "tile_grid_size", "data_format")
    assert {k: config[k] for k in keys} == {k: keras_config[k] for k in keys}
    assert type(layer).from_config(config).get_config() == config
    x = _images((2, 8, 12, 3)) / 255
    eager = np.asarray(layer(x))
    np.testing.assert_array_equal(np.asarray(layer(x, training=False)), eager)
    np.testing.assert_array_equal(np.asarray(layer({"images": x})["images"]), eager)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda v: layer(v))(x)), eager, atol=1e-5)
    with pytest.raises(ValueError, match="tile_grid_size"):
        getattr(loopax.layers, NAME)(tile_grid_size=(0, 2))
