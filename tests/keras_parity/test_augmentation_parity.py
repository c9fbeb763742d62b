"""Augmentation layers and `ops.image.affine_transform` against Keras.

The random draws differ (different generators), so Keras and loopax are
compared where the result is determined: the warp/colour transform for the
same parameters (Keras's `transform_images` with a given transformation
dict), the rotation matrix, the identity at inference, configs; and in
training, the range of the drawn parameters and the clipping to
`value_range`. Tolerance: atol 1e-4 on 0..255 pixels (float32 sums).
"""

import jax.numpy as jnp
import numpy as np
import pytest
from keras_reference import keras

import loopax
from loopax.src.layers.preprocessing.image.augmentation import rotation_matrix

rng = np.random.default_rng(5)
images = (rng.random((2, 7, 9, 3)) * 255).astype("float32")
FILL_MODES = ["reflect", "wrap", "constant", "nearest"]


@pytest.mark.parametrize("fill_mode", FILL_MODES + ["mirror"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_affine_transform_matches_keras(fill_mode, interpolation, data_format):
    transform = rng.standard_normal((2, 8)).astype("float32") * 0.3
    transform[:, [0, 4]] += 1
    transform[:, 2] += 1.5
    transform[:, 6:] = 0  # Keras's JAX backend ignores the projective terms
    x = images if data_format == "channels_last" else images.transpose(0, 3, 1, 2)
    args = dict(interpolation=interpolation, fill_mode=fill_mode, fill_value=7.0,
                data_format=data_format)
    expected = keras.ops.image.affine_transform(x, transform, **args)
    np.testing.assert_allclose(loopax.ops.image.affine_transform(x, transform, **args),
                               expected, atol=1e-4)
    np.testing.assert_allclose(  # one image, one transform
        loopax.ops.image.affine_transform(x[1], transform[1], **args), expected[1], atol=1e-4)


def test_affine_transform_bad_arguments_are_named():
    with pytest.raises(ValueError, match="transform"):
        loopax.ops.image.affine_transform(images, np.zeros((2, 6)))
    with pytest.raises(ValueError, match="fill_mode"):
        loopax.ops.image.affine_transform(images, np.eye(3).ravel()[:8], fill_mode="edge")


def test_rotation_matrix_matches_keras():
    angles = jnp.array([30.0, -100.0, 180.0])
    n = len(angles)
    expected = keras.layers.RandomRotation(0.1)._compute_affine_matrix(
        0.5, 0.5, angles, jnp.zeros(n), jnp.zeros(n), jnp.ones(n), jnp.zeros(n), jnp.zeros(n),
        7, 9)
    np.testing.assert_allclose(rotation_matrix(angles, 7, 9), expected, atol=1e-5)


angles = np.array([30.0, -100.0], "float32")
TRANSFORMS = [
    pytest.param("RandomRotation", {"factor": 0.3, "fill_mode": mode},
                 {"rotation_matrix": rotation_matrix(angles, 7, 9)}, id=f"RandomRotation-{mode}")
    for mode in FILL_MODES
] + [
    pytest.param("RandomRotation", {"factor": 0.3, "interpolation": "nearest",
                                    "fill_mode": "constant", "fill_value": 5.0},
                 {"rotation_matrix": rotation_matrix(angles, 7, 9)},
                 id="RandomRotation-nearest-constant"),
    pytest.param("RandomZoom", {"height_factor": 0.4, "width_factor": (-0.5, 0.2)},
                 {"height_zoom": np.array([[0.7], [1.3]]), "width_zoom": np.array([[1.2], [0.6]])},
                 id="RandomZoom"),
    pytest.param("RandomZoom", {"height_factor": 0.4, "fill_mode": "constant"},
                 {"height_zoom": np.array([[1.3], [0.8]]), "width_zoom": np.array([[1.3], [0.8]])},
                 id="RandomZoom-constant"),
    pytest.param("RandomTranslation", {"height_factor": 0.3, "width_factor": 0.2},
                 {"translations": np.array([[1.5, -2.0], [-0.3, 3.2]], "float32")},
                 id="RandomTranslation"),
    pytest.param("RandomTranslation", {"height_factor": 0.3, "width_factor": 0.2,
                                       "fill_mode": "wrap", "interpolation": "nearest"},
                 {"translations": np.array([[2.0, -1.0], [-3.0, 1.0]], "float32")},
                 id="RandomTranslation-wrap-nearest"),
    pytest.param("RandomContrast", {"factor": 0.5},
                 {"contrast_factor": np.array([0.5, 1.4], "float32").reshape(2, 1, 1, 1)},
                 id="RandomContrast"),
    pytest.param("RandomBrightness", {"factor": 0.5},
                 {"rgb_delta": np.array([-80.0, 100.0], "float32").reshape(2, 1, 1, 1)},
                 id="RandomBrightness"),
]


@pytest.mark.parametrize("name, kwargs, transformation", TRANSFORMS)
def test_transform_for_given_parameters_matches_keras(name, kwargs, transformation):
    keras_layer = getattr(keras.layers, name)(**kwargs)
    loopax_layer = getattr(loopax.layers, name)(**kwargs)
    expected = keras_layer.transform_images(images, dict(transformation))
    np.testing.assert_allclose(loopax_layer.transform_images(images, dict(transformation)),
                               expected, atol=1e-4)


def test_zoom_channels_first_and_single_image_match_keras():
    kwargs = {"height_factor": 0.3, "data_format": "channels_first"}
    zoom = {"height_zoom": np.array([[0.75]]), "width_zoom": np.array([[0.75]])}
    x = images[0].transpose(2, 0, 1)
    np.testing.assert_allclose(
        loopax.layers.RandomZoom(**kwargs).transform_images(x, dict(zoom)),
        keras.layers.RandomZoom(**kwargs).transform_images(x, dict(zoom)), atol=1e-4)


LAYERS = [
    pytest.param("RandomRotation", {"factor": 0.2}, id="RandomRotation-symmetric"),
    pytest.param("RandomRotation",
                 {"factor": (-0.1, 0.3), "fill_mode": "constant", "fill_value": 1.0},
                 id="RandomRotation-range-constant_fill"),
    pytest.param("RandomZoom", {"height_factor": 0.2, "width_factor": (-0.3, 0.1)},
                 id="RandomZoom-height_and_width"),
    pytest.param("RandomTranslation", {"height_factor": 0.2, "width_factor": (0.0, 0.4)},
                 id="RandomTranslation-height_and_width"),
    pytest.param("RandomContrast", {"factor": 0.3, "value_range": (0, 1)},
                 id="RandomContrast-unit_range"),
    pytest.param("RandomContrast", {"factor": (0.2, 0.6)}, id="RandomContrast-factor_range"),
    pytest.param("RandomBrightness", {"factor": (-0.2, 0.4), "value_range": (0, 1)},
                 id="RandomBrightness-unit_range"),
]


@pytest.mark.parametrize("name, kwargs", LAYERS)
def test_config_and_inference_identity_match_keras(name, kwargs):
    keras_layer = getattr(keras.layers, name)(**kwargs, seed=3)
    loopax_layer = getattr(loopax.layers, name)(**kwargs, seed=3)
    ignore = ("name", "dtype")
    assert ({k: v for k, v in loopax_layer.get_config().items() if k not in ignore}
            == {k: v for k, v in keras_layer.get_config().items() if k not in ignore})
    restored = type(loopax_layer).from_config(loopax_layer.get_config())
    assert restored.get_config() == loopax_layer.get_config()
    np.testing.assert_array_equal(loopax_layer(images, training=False), images)
    np.testing.assert_array_equal(keras_layer(images, training=False), images)


def test_drawn_parameters_stay_in_keras_ranges():
    x = np.zeros((400, 5, 6, 1), "float32")
    rotation = loopax.layers.RandomRotation((-0.1, 0.25), seed=1)
    angle = np.asarray(rotation.get_random_transformation(x)["angle"])
    assert -36.0 <= angle.min() < -30 and 85 < angle.max() <= 90.0
    zoom = loopax.layers.RandomZoom((-0.3, 0.1), seed=1).get_random_transformation(x)
    assert np.array_equal(zoom["height_zoom"], zoom["width_zoom"])  # width_factor=None
    assert 0.7 <= np.min(zoom["height_zoom"]) < 0.75 and 1.05 < np.max(zoom["height_zoom"]) <= 1.1
    shift = loopax.layers.RandomTranslation(0.5, (0.0, 0.5), seed=1).get_random_transformation(x)
    dx, dy = np.asarray(shift["translations"]).T
    assert 0 <= dx.min() < 0.2 and 2.8 < dx.max() <= 3.0       # (0, 0.5) of width 6
    assert -2.5 <= dy.min() < -2.2 and 2.2 < dy.max() <= 2.5   # (-0.5, 0.5) of height 5
    # As Keras 3.15: a single contrast factor f draws in [1, 1 + f].
    contrast = loopax.layers.RandomContrast(0.4, seed=1).get_random_transformation(x)
    factor = np.asarray(contrast["contrast_factor"])
    assert keras.layers.RandomContrast(0.4).factor == (0, 0.4)
    assert 1.0 <= factor.min() < 1.05 and 1.35 < factor.max() <= 1.4
    brightness = loopax.layers.RandomBrightness(0.1, value_range=(0, 2), seed=1)
    delta = np.asarray(brightness.get_random_transformation(x)["rgb_delta"])
    assert -0.2 <= delta.min() < -0.18 and 0.18 < delta.max() <= 0.2


@pytest.mark.parametrize("name, kwargs", LAYERS)
def test_training_output_is_random_seeded_and_in_range(name, kwargs):
    x = images / 255 if kwargs.get("value_range") == (0, 1) else images
    first = loopax.layers.__dict__[name](**kwargs, seed=4)
    second = loopax.layers.__dict__[name](**kwargs, seed=4)
    out = np.asarray(first(x, training=True))
    assert out.shape == x.shape and not np.allclose(out, x)
    np.testing.assert_array_equal(out, second(x, training=True))  # same seed, same draw
    assert not np.array_equal(out, first(x, training=True))        # next call: new draw
    if "value_range" in first.get_config():
        low, high = first.get_config()["value_range"]
        assert out.min() >= low and out.max() <= high


def test_keras_rejects_what_loopax_rejects():
    for module in (keras, loopax):
        with pytest.raises(ValueError, match="factor"):
            module.layers.RandomRotation(1.5)
        with pytest.raises(ValueError):
            module.layers.RandomZoom(-1.0)
        with pytest.raises((ValueError, NotImplementedError), match="fill_mode"):
            module.layers.RandomTranslation(0.1, 0.1, fill_mode="edge")
        with pytest.raises(ValueError, match="factor"):
            module.layers.RandomContrast(-0.5)
