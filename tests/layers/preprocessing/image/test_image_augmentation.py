"""Keras 3's image augmentation layers (MixUp, CutMix, RandomGrayscale,
RandomInvert, Solarization, RandomPosterization, AutoContrast, Equalization,
RandomErasing) against Keras 3.15.1 itself.

The random draws differ (different generators), so outputs are compared where
they are determined: deterministic layers on whole calls; random layers by
replaying a transformation Keras drew through both layers'
`transform_images`/`transform_labels`, and by whole calls with the randomness
switched off (factor ranges of zero width). Also: configs both ways, same seed
-> same output, value ranges, the identity at inference, and training in fit().
Tolerance: atol 1e-3 on 0..255 pixels (float32).
"""



import numpy as np
import pytest
from compile_once import identical_programs_compiled_once

import loopax

keras = pytest.importorskip("keras")

rng = np.random.default_rng(7)
IMAGES = (rng.random((4, 6, 7, 3)) * 255).astype("float32")
LABELS = np.eye(3, dtype="float32")[[0, 1, 2, 1]]


def _pair(name, kwargs):
    return getattr(keras.layers, name)(**kwargs), getattr(loopax.layers, name)(**kwargs)


def _channels_first(x):
    return x.transpose(0, 3, 1, 2)


DETERMINISTIC = [
    pytest.param("AutoContrast", {}, IMAGES, id="AutoContrast"),
    pytest.param("AutoContrast", {"value_range": (0, 1)}, IMAGES / 255,
                 id="AutoContrast-unit_range"),
    pytest.param("AutoContrast", {}, np.concatenate([IMAGES[:, :, :, :2],
                                                      np.full((4, 6, 7, 1), 9.0, "float32")], -1),
                 id="AutoContrast-constant_channel_kept"),
    pytest.param("Equalization", {}, IMAGES, id="Equalization"),
    pytest.param("Equalization", {"bins": 16, "value_range": (0, 1)}, IMAGES / 255,
                 id="Equalization-16_bins-unit_range"),
    pytest.param("Equalization", {"data_format": "channels_first"}, _channels_first(IMAGES),
                 id="Equalization-channels_first"),
    pytest.param("Equalization", {}, np.round(IMAGES / 64) * 64, id="Equalization-few_levels"),
]


@pytest.mark.parametrize("name, kwargs, x", DETERMINISTIC)
@pytest.mark.parametrize("training", [True, False], ids=["training", "inference"])
def test_deterministic_layers_match_keras(name, kwargs, x, training):
    keras_layer, loopax_layer = _pair(name, kwargs)
    expected = np.asarray(keras_layer(x, training=training))
    np.testing.assert_allclose(loopax_layer(x, training=training), expected, atol=1e-3)
    np.testing.assert_allclose(loopax_layer(x[0], training=training),
                               keras_layer(x[0], training=training), atol=1e-3)


def test_auto_contrast_channels_first_stretches_each_channel_as_channels_last():
    # Keras 3.15 takes the min/max over axes (1, 2) whatever the layout, i.e. over
    # channels and rows for channels_first; loopax stretches each channel alike.
    last = loopax.layers.AutoContrast()(IMAGES)
    first = loopax.layers.AutoContrast(data_format="channels_first")(_channels_first(IMAGES))
    np.testing.assert_allclose(first, _channels_first(np.asarray(last)), atol=1e-4)
    assert np.allclose(np.asarray(last).min(axis=(1, 2)), 0) and \
        np.allclose(np.asarray(last).max(axis=(1, 2)), 255)


REPLAYED = [
    pytest.param("MixUp", {"alpha": 0.4}, id="MixUp"),
    pytest.param("CutMix", {"factor": 0.8}, id="CutMix"),
    pytest.param("CutMix", {"data_format": "channels_first"}, id="CutMix-channels_first"),
    pytest.param("RandomGrayscale", {"factor": 0.5}, id="RandomGrayscale"),
    pytest.param("RandomGrayscale", {"factor": 0.7, "data_format": "channels_first"},
                 id="RandomGrayscale-channels_first"),
    pytest.param("RandomInvert", {"factor": 0.6}, id="RandomInvert"),
    pytest.param("Solarization", {"addition_factor": 0.3, "threshold_factor": (0.2, 0.8)},
                 id="Solarization"),
    pytest.param("Solarization", {"addition_factor": 0.2, "threshold_factor": 0.5,
                                  "value_range": (0, 1)}, id="Solarization-unit_range"),
    pytest.param("RandomPosterization", {"factor": (1, 8)}, id="RandomPosterization"),
    pytest.param("RandomPosterization", {"factor": 3, "value_range": (0, 1)},
                 id="RandomPosterization-unit_range"),
    pytest.param("RandomErasing", {"scale": (0.1, 0.6)}, id="RandomErasing-noise_fill"),
    pytest.param("RandomErasing", {"factor": 0.7, "fill_value": 40.0}, id="RandomErasing-fill"),
]


def _images_for(kwargs):
    x = IMAGES / 255 if kwargs.get("value_range") == (0, 1) else IMAGES
    return _channels_first(x) if kwargs.get("data_format") == "channels_first" else x


@pytest.mark.parametrize("name, kwargs", REPLAYED)
def test_transform_of_a_keras_drawn_transformation_matches_keras(name, kwargs):
    keras_layer, loopax_layer = _pair(name, {**kwargs, "seed": 3})
    x = _images_for(kwargs)
    transformation = keras_layer.get_random_transformation(x, training=True)
    expected = np.asarray(keras_layer.transform_images(x, transformation))
    assert not np.allclose(expected, x)  # the replayed draw changes something
    np.testing.assert_allclose(loopax_layer.transform_images(x, transformation), expected,
                               atol=1e-3)
    if name in ("MixUp", "CutMix"):
        np.testing.assert_allclose(
            loopax_layer.transform_labels(LABELS, transformation),
            keras_layer.transform_labels(LABELS, transformation), atol=1e-6)


def test_cutmix_box_masks_and_label_weights_match_keras_for_the_same_corners():
    from loopax.src.layers.preprocessing.image.image_augmentation import _box_masks
    corners = tuple(np.array(c, "float32") for c in
                    ([0.5, 2.0, 0.0, 3.3], [4.2, 6.5, 7.0, 3.9], [1.0, 0.2, 0.0, 5.5],
                     [3.5, 5.9, 6.0, 6.0]))
    masks, weight = keras.layers.CutMix()._generate_batch_mask(IMAGES.shape, corners)
    np.testing.assert_array_equal(_box_masks(corners, IMAGES.shape, "channels_last"), masks)
    x0, x1, y0, y1 = corners
    np.testing.assert_allclose(np.ravel(weight), 1 - (x1 - x0) * (y1 - y0) / (6 * 7), rtol=1e-6)


SWITCHED_OFF = [  # zero-width factor ranges: the whole random call is determined
    pytest.param("RandomGrayscale", {"factor": 1.0}, id="RandomGrayscale-always"),
    pytest.param("RandomGrayscale", {"factor": 0.0}, id="RandomGrayscale-never"),
    pytest.param("RandomInvert", {"factor": (1.0, 1.0)}, id="RandomInvert-always"),
    pytest.param("RandomInvert", {"factor": (0.0, 0.0), "value_range": (0, 1)},
                 id="RandomInvert-never"),
    pytest.param("Solarization", {}, id="Solarization-defaults_invert_all"),
    pytest.param("Solarization", {"value_range": (0, 1)}, id="Solarization-unit_range"),
    pytest.param("RandomPosterization", {"factor": (3, 3)}, id="RandomPosterization-3_bits"),
    pytest.param("RandomPosterization", {"factor": (5, 5), "value_range": (0, 1)},
                 id="RandomPosterization-5_bits-unit_range"),
    pytest.param("RandomErasing", {"factor": (1.0, 1.0), "scale": (1.0, 1.0),
                                   "fill_value": 12.0}, id="RandomErasing-whole_image"),
    pytest.param("RandomErasing", {"factor": 0.0}, id="RandomErasing-never"),
]


@pytest.mark.parametrize("name, kwargs", SWITCHED_OFF)
def test_calls_with_the_randomness_switched_off_match_keras(name, kwargs):
    keras_layer, loopax_layer = _pair(name, kwargs)
    x = _images_for(kwargs)
    expected = np.asarray(keras_layer(x, training=True))
    np.testing.assert_allclose(loopax_layer(x, training=True), expected, atol=1e-3)
    np.testing.assert_allclose(loopax_layer(x[1], training=True), expected[1], atol=1e-3)


RANDOM = [p for p in REPLAYED if "channels_first" not in p.id]


CONFIGURED = RANDOM + [pytest.param(*p.values[:2], id=p.id) for p in DETERMINISTIC[:2]
                       + DETERMINISTIC[3:5]]


@pytest.mark.parametrize("name, kwargs", CONFIGURED)
def test_config_matches_keras_and_round_trips(name, kwargs):
    keras_layer, loopax_layer = _pair(name, kwargs)
    # Keras 3.15's RandomGrayscale forgets its seed in the config; loopax keeps it.
    ignore = ("name", "dtype") + (("seed",) if name == "RandomGrayscale" else ())
    ours = {k: v for k, v in loopax_layer.get_config().items() if k not in ignore}
    theirs = {k: v for k, v in keras_layer.get_config().items() if k not in ignore}
    assert {k: list(v) if isinstance(v, tuple) else v for k, v in ours.items()} == \
        {k: list(v) if isinstance(v, tuple) else v for k, v in theirs.items()}
    restored = type(loopax_layer).from_config(loopax_layer.get_config())
    assert restored.get_config() == loopax_layer.get_config()


@pytest.mark.parametrize("name, kwargs", RANDOM)
def test_random_layers_are_seeded_in_range_and_identity_at_inference(name, kwargs):
    x = _images_for(kwargs)
    first, second = (getattr(loopax.layers, name)(**kwargs, seed=5) for _ in range(2))
    out = np.asarray(first(x, training=True))
    assert out.shape == x.shape and out.dtype == np.float32
    np.testing.assert_array_equal(out, second(x, training=True))  # same seed, same draw
    low, high = kwargs.get("value_range", (0, 255))
    assert out.min() >= low - 1e-4 and out.max() <= high + 1e-4
    np.testing.assert_array_equal(first(x, training=False), x)
    np.testing.assert_array_equal(keras.layers.__dict__[name](**kwargs)(x, training=False), x)


@pytest.mark.parametrize("name", ["MixUp", "CutMix"])
def test_dict_inputs_mix_labels_with_the_images_draw(name):
    layer = getattr(loopax.layers, name)(seed=11)
    twin = getattr(loopax.layers, name)(seed=11)
    out = layer({"images": IMAGES, "labels": LABELS}, training=True)
    transformation = twin.get_random_transformation(IMAGES)
    np.testing.assert_allclose(out["images"], twin.transform_images(IMAGES, transformation))
    np.testing.assert_allclose(out["labels"], twin.transform_labels(LABELS, transformation))
    np.testing.assert_allclose(np.sum(out["labels"], axis=1), 1.0, rtol=1e-5)
    assert not np.allclose(out["labels"], LABELS)


def test_random_erasing_fills_each_channel_with_its_fill_value():
    # Keras 3.15's own call fails on JAX for a per-channel fill (jnp.full_like of a tuple).
    layer = loopax.layers.RandomErasing((1.0, 1.0), (1.0, 1.0), fill_value=(10, 20, 300))
    out = np.asarray(layer(IMAGES, training=True))
    np.testing.assert_array_equal(out, np.broadcast_to([10, 20, 255], IMAGES.shape))
    first = loopax.layers.RandomErasing((1.0, 1.0), (1.0, 1.0), fill_value=(10, 20, 30),
                                        data_format="channels_first")
    np.testing.assert_array_equal(first(_channels_first(IMAGES), training=True),
                                  np.broadcast_to([[[10]], [[20]], [[30]]], (4, 3, 6, 7)))


def test_cutmix_leaves_a_single_image_unchanged_as_keras():
    np.testing.assert_array_equal(loopax.layers.CutMix(seed=1)(IMAGES[0]), IMAGES[0])
    np.testing.assert_array_equal(keras.layers.CutMix(seed=1)(IMAGES[0]), IMAGES[0])


def test_bad_arguments_are_named():
    for module in (keras, loopax):
        with pytest.raises(ValueError, match="factor"):
            module.layers.RandomGrayscale(factor=1.5)
        with pytest.raises(ValueError, match="factor"):
            module.layers.RandomPosterization(factor=9)
        with pytest.raises(ValueError, match="factor"):
            module.layers.Solarization(addition_factor=2.0)
        with pytest.raises(ValueError, match="value_range"):
            module.layers.AutoContrast(value_range=5)
    with pytest.raises(ValueError, match="channels"):
        loopax.layers.RandomGrayscale(1.0)(IMAGES[..., :2])
    with pytest.raises(ValueError, match="'images'.*segmentation_masks"):
        loopax.layers.MixUp()({"images": IMAGES, "segmentation_masks": IMAGES})
    with pytest.raises(ValueError, match="fill_value"):
        loopax.layers.RandomErasing(fill_value=(1, 2))


def _train(augmentation):
    loopax.utils.set_random_seed(0)
    model = loopax.Sequential([loopax.Input((6, 7, 3))] + augmentation
                              + [loopax.layers.Flatten(), loopax.layers.Dense(3)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
    history = model.fit(IMAGES / 255, LABELS, batch_size=2, epochs=2, verbose=0)
    return model, history


def _augmentations():
    return [loopax.layers.CutMix(seed=1), loopax.layers.MixUp(seed=2),
            loopax.layers.RandomGrayscale(seed=3), loopax.layers.RandomInvert(0.5, (0, 1), seed=4),
            loopax.layers.Solarization(0.1, 0.5, (0, 1), seed=5),
            loopax.layers.RandomPosterization(4, (0, 1), seed=6),
            loopax.layers.RandomErasing(seed=7, value_range=(0, 1)),
            loopax.layers.Equalization((0, 1))]


def test_augmentation_trains_in_fit_seeded_and_passes_through_at_inference(tmp_path):
    plain, _ = _train([])
    with identical_programs_compiled_once(tmp_path):
        augmented, history = _train(_augmentations())
        again, _ = _train(_augmentations())
    assert np.all(np.isfinite(history.history["loss"]))
    assert not np.allclose(plain.get_weights()[0], augmented.get_weights()[0])
    for a, b in zip(augmented.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
    kernel, bias = augmented.layers[-1].get_weights()
    np.testing.assert_allclose(augmented.predict(IMAGES / 255, verbose=0),
                               (IMAGES / 255).reshape(4, -1) @ kernel + bias, rtol=1e-4,
                               atol=1e-4)
