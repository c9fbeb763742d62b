"""Keras 3's colour/filter augmentation layers (RandomColorDegeneration,
RandomSaturation, RandomHue, RandomColorJitter, RandomSharpness,
RandomGaussianBlur) against Keras 3.15.1 itself.

As in test_image_augmentation: a transformation Keras drew is replayed through
both layers' `transform_images`; whole calls are compared with the randomness
switched off (zero-width factor ranges); configs both ways; same seed -> same
output; the identity at inference; training in fit(). Tolerance: atol 1e-3 on
0..255 pixels (float32).
"""



import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

rng = np.random.default_rng(3)
IMAGES = (rng.random((4, 6, 7, 3)) * 255).astype("float32")
IMAGES[0, 0, 0] = IMAGES[0, 0, 1] = 0.0   # black and gray pixels: the HSV edge cases
IMAGES[0, 1, 1] = 128.0
LABELS = np.eye(3, dtype="float32")[[0, 1, 2, 1]]


def _pair(name, kwargs):
    return getattr(keras.layers, name)(**kwargs), getattr(loopax.layers, name)(**kwargs)


def _images_for(kwargs):
    x = IMAGES / 255 if kwargs.get("value_range") == (0, 1) else IMAGES
    return x.transpose(0, 3, 1, 2) if kwargs.get("data_format") == "channels_first" else x


REPLAYED = [
    pytest.param("RandomColorDegeneration", {"factor": 0.6}, id="RandomColorDegeneration"),
    pytest.param("RandomColorDegeneration", {"factor": (0.2, 0.9), "value_range": (0, 1),
                                             "data_format": "channels_first"},
                 id="RandomColorDegeneration-unit_range-channels_first"),
    pytest.param("RandomSaturation", {"factor": (0.2, 0.9)}, id="RandomSaturation"),
    pytest.param("RandomSaturation", {"factor": 0.8, "data_format": "channels_first"},
                 id="RandomSaturation-channels_first"),
    pytest.param("RandomHue", {"factor": 0.8}, id="RandomHue"),
    pytest.param("RandomHue", {"factor": (0.3, 1.0), "value_range": (0, 1),
                               "data_format": "channels_first"},
                 id="RandomHue-unit_range-channels_first"),
    pytest.param("RandomSharpness", {"factor": 0.9}, id="RandomSharpness"),
    pytest.param("RandomSharpness", {"factor": (0.0, 1.0), "data_format": "channels_first"},
                 id="RandomSharpness-channels_first"),
    pytest.param("RandomGaussianBlur", {"kernel_size": 5, "sigma": (0.3, 1.0)},
                 id="RandomGaussianBlur"),
    pytest.param("RandomGaussianBlur", {"factor": 0.8, "kernel_size": (3, 5),
                                        "data_format": "channels_first"},
                 id="RandomGaussianBlur-3x5-channels_first"),
]


@pytest.mark.parametrize("name, kwargs", REPLAYED)
def test_transform_of_a_keras_drawn_transformation_matches_keras(name, kwargs):
    keras_layer, loopax_layer = _pair(name, {**kwargs, "seed": 3})
    x = _images_for(kwargs)
    transformation = keras_layer.get_random_transformation(x, training=True)
    expected = np.asarray(keras_layer.transform_images(x, transformation))
    assert not np.allclose(expected, x, atol=1e-2)
    np.testing.assert_allclose(loopax_layer.transform_images(x, transformation), expected,
                               atol=1e-3)


SWITCHED_OFF = [
    pytest.param("RandomColorDegeneration", {"factor": (1.0, 1.0)},
                 id="RandomColorDegeneration-grayscale"),
    pytest.param("RandomSaturation", {"factor": (0.3, 0.3)}, id="RandomSaturation-fixed"),
    pytest.param("RandomSaturation", {"factor": (0.0, 0.0), "value_range": (0, 1)},
                 id="RandomSaturation-desaturate"),
    pytest.param("RandomHue", {"factor": 0.0}, id="RandomHue-zero_hsv_round_trip"),
    pytest.param("RandomSharpness", {"factor": (0.0, 0.0)}, id="RandomSharpness-smooth"),
    pytest.param("RandomSharpness", {"factor": (1.0, 1.0), "value_range": (0, 1)},
                 id="RandomSharpness-sharpen"),
    pytest.param("RandomGaussianBlur", {"factor": (1.0, 1.0), "sigma": (0.5, 0.5)},
                 id="RandomGaussianBlur-always"),
    pytest.param("RandomGaussianBlur", {"factor": 0.0, "sigma": (0.5, 0.5)},
                 id="RandomGaussianBlur-never"),
    pytest.param("RandomColorJitter", {"brightness_factor": (0.1, 0.1), "contrast_factor": 0.0,
                                       "saturation_factor": (0.3, 0.3), "hue_factor": 0.0},
                 id="RandomColorJitter-all_fixed"),
    pytest.param("RandomColorJitter", {"saturation_factor": (0.8, 0.8), "value_range": (0, 1)},
                 id="RandomColorJitter-saturation_only"),
]


@pytest.mark.parametrize("name, kwargs", SWITCHED_OFF)
def test_calls_with_the_randomness_switched_off_match_keras(name, kwargs):
    keras_layer, loopax_layer = _pair(name, kwargs)
    x = _images_for(kwargs)
    expected = np.asarray(keras_layer(x, training=True))
    np.testing.assert_allclose(loopax_layer(x, training=True), expected, atol=1e-3)
    np.testing.assert_allclose(loopax_layer(x[1], training=True), expected[1], atol=1e-3)


RANDOM = [p for p in REPLAYED if "channels_first" not in p.id] + [
    pytest.param("RandomColorJitter", {"brightness_factor": 0.2, "contrast_factor": 0.3,
                                       "saturation_factor": (0.4, 0.7), "hue_factor": 0.2},
                 id="RandomColorJitter")]


@pytest.mark.parametrize("name, kwargs", RANDOM)
def test_config_matches_keras_and_round_trips(name, kwargs):
    keras_layer, loopax_layer = _pair(name, kwargs)
    tuples_as_lists = lambda config: {
        k: list(v) if isinstance(v, tuple) else v for k, v in config.items()
        if k not in ("name", "dtype")}
    assert tuples_as_lists(loopax_layer.get_config()) == tuples_as_lists(keras_layer.get_config())
    restored = type(loopax_layer).from_config(loopax_layer.get_config())
    assert restored.get_config() == loopax_layer.get_config()


@pytest.mark.parametrize("name, kwargs", RANDOM)
def test_random_layers_are_seeded_and_identity_at_inference(name, kwargs):
    x = _images_for(kwargs)
    first, second = (getattr(loopax.layers, name)(**kwargs, seed=5) for _ in range(2))
    out = np.asarray(first(x, training=True))
    assert out.shape == x.shape and out.dtype == np.float32 and np.all(np.isfinite(out))
    np.testing.assert_array_equal(out, second(x, training=True))
    assert not np.array_equal(out, first(x, training=True))  # next call: new draw
    if name != "RandomSaturation":  # Keras clips the saturation, not the RGB values
        low, high = kwargs.get("value_range", (0, 255))
        assert out.min() >= low - 1e-3 and out.max() <= high + 1e-3
    np.testing.assert_array_equal(first(x, training=False), x)
    np.testing.assert_array_equal(getattr(keras.layers, name)(**kwargs)(x, training=False), x)


def test_color_jitter_steps_draw_independently():
    jitter = loopax.layers.RandomColorJitter(hue_factor=0.5, saturation_factor=0.5, seed=1)
    saturation, hue = jitter.steps
    assert saturation.seed != hue.seed


def test_bad_arguments_are_named():
    for module in (keras, loopax):
        with pytest.raises(ValueError, match="kernel_size"):
            module.layers.RandomGaussianBlur(kernel_size=4)
        with pytest.raises(ValueError, match="factor"):
            module.layers.RandomHue(factor=1.5)
        with pytest.raises(ValueError, match="factor"):
            module.layers.RandomSharpness(factor=(0.5, 2, 3))
    with pytest.raises(ValueError, match="3 channels"):
        loopax.layers.RandomColorDegeneration(0.5)(IMAGES[..., :1])


def test_color_augmentation_trains_in_fit_seeded_and_passes_through_at_inference():
    def train(augment):
        loopax.utils.set_random_seed(0)
        steps = [loopax.layers.RandomColorJitter((0, 1), 0.1, 0.2, 0.5, 0.1, seed=1),
                 loopax.layers.RandomColorDegeneration(0.5, (0, 1), seed=2),
                 loopax.layers.RandomSharpness(0.7, (0, 1), seed=3),
                 loopax.layers.RandomGaussianBlur(0.5, value_range=(0, 1), seed=4)]
        model = loopax.Sequential([loopax.Input((6, 7, 3))] + (steps if augment else [])
                                  + [loopax.layers.Flatten(), loopax.layers.Dense(3)])
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
        model.fit(IMAGES / 255, LABELS, batch_size=2, epochs=2, verbose=0)
        return model

    plain, augmented, again = train(False), train(True), train(True)
    assert not np.allclose(plain.get_weights()[0], augmented.get_weights()[0])
    for a, b in zip(augmented.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
    kernel, bias = augmented.layers[-1].get_weights()
    np.testing.assert_allclose(augmented.predict(IMAGES / 255, verbose=0),
                               (IMAGES / 255).reshape(4, -1) @ kernel + bias, rtol=1e-4,
                               atol=1e-4)
