"""RandomShear and RandomPerspective against Keras 3.15.1 itself: a
transformation Keras drew replayed through both layers' `transform_images`,
the homography against Keras's, configs both ways, same seed -> same output,
the identity at inference, training in fit(). Tolerance: atol 1e-3 on 0..255
pixels (float32).
"""



import numpy as np
import pytest

import loopax
from loopax.src.layers.preprocessing.image.geometric_augmentation import homography

keras = pytest.importorskip("keras")

rng = np.random.default_rng(4)
IMAGES = (rng.random((3, 6, 8, 2)) * 255).astype("float32")


def _images_for(kwargs):
    return IMAGES.transpose(0, 3, 1, 2) if kwargs.get("data_format") == "channels_first" \
        else IMAGES


CASES = [
    pytest.param("RandomShear", {"x_factor": 0.5, "y_factor": (0.1, 0.4)}, id="RandomShear"),
    pytest.param("RandomShear", {"x_factor": 0.3, "y_factor": 0.3, "fill_mode": "constant",
                                 "fill_value": 5.0, "interpolation": "nearest"},
                 id="RandomShear-constant-nearest"),
    pytest.param("RandomShear", {"y_factor": 0.6, "fill_mode": "wrap",
                                 "data_format": "channels_first"},
                 id="RandomShear-wrap-channels_first"),
    pytest.param("RandomPerspective", {"factor": 0.7, "scale": 0.6}, id="RandomPerspective"),
    pytest.param("RandomPerspective", {"fill_value": 9.0, "interpolation": "nearest",
                                       "data_format": "channels_first"},
                 id="RandomPerspective-nearest-channels_first"),
]


@pytest.mark.parametrize("name, kwargs", CASES)
def test_transform_of_a_keras_drawn_transformation_matches_keras(name, kwargs):
    keras_layer = getattr(keras.layers, name)(**kwargs, seed=2)
    loopax_layer = getattr(loopax.layers, name)(**kwargs)
    x = _images_for(kwargs)
    transformation = keras_layer.get_random_transformation(x, training=True)
    expected = np.asarray(keras_layer.transform_images(x, transformation))
    assert not np.allclose(expected, x)
    np.testing.assert_allclose(loopax_layer.transform_images(x, transformation), expected,
                               atol=1e-3)


def test_homography_matches_keras():
    start = rng.random((2, 4, 2)).astype("float32") * 10
    end = start + rng.standard_normal((2, 4, 2)).astype("float32")
    from keras.src.backend.jax.image import compute_homography_matrix
    np.testing.assert_allclose(homography(start, end), compute_homography_matrix(start, end),
                               rtol=1e-4, atol=1e-4)


def test_perspective_with_the_randomness_switched_off_matches_keras():
    for kwargs in ({"factor": (1.0, 1.0), "scale": 0.0}, {"factor": 0.0}):
        expected = keras.layers.RandomPerspective(**kwargs)(IMAGES, training=True)
        out = loopax.layers.RandomPerspective(**kwargs)(IMAGES, training=True)
        np.testing.assert_allclose(out, expected, atol=1e-3)
        np.testing.assert_allclose(out, IMAGES, atol=1e-3)  # both: no distortion


@pytest.mark.parametrize("name, kwargs", [c for c in CASES if "channels_first" not in c.id])
def test_config_matches_keras_seeded_and_identity_at_inference(name, kwargs):
    keras_layer = getattr(keras.layers, name)(**kwargs, seed=6)
    first, second = (getattr(loopax.layers, name)(**kwargs, seed=6) for _ in range(2))
    ignore = ("name", "dtype")
    assert {k: v for k, v in first.get_config().items() if k not in ignore} == \
        {k: v for k, v in keras_layer.get_config().items() if k not in ignore}
    assert type(first).from_config(first.get_config()).get_config() == first.get_config()
    if name == "RandomShear":  # Keras 3.15 refuses its own saved (-f, f) shear range
        with pytest.raises((TypeError, ValueError), match="factor"):
            type(keras_layer).from_config(keras_layer.get_config())
    out = np.asarray(first(IMAGES, training=True))
    assert out.shape == IMAGES.shape and not np.allclose(out, IMAGES)
    np.testing.assert_array_equal(out, second(IMAGES, training=True))
    np.testing.assert_array_equal(first(IMAGES, training=False), IMAGES)
    np.testing.assert_array_equal(keras_layer(IMAGES, training=False), IMAGES)


def test_bad_arguments_are_named():
    for module in (keras, loopax):
        with pytest.raises(ValueError, match="factor"):
            module.layers.RandomShear(x_factor=1.5)
        with pytest.raises(ValueError, match="scale"):
            module.layers.RandomPerspective(scale=2.0)
        with pytest.raises((ValueError, NotImplementedError), match="fill_mode"):
            module.layers.RandomShear(fill_mode="edge")
        with pytest.raises((ValueError, NotImplementedError), match="interpolation"):
            module.layers.RandomPerspective(interpolation="bicubic")


def test_warps_train_in_fit_seeded_and_pass_through_at_inference():
    y = np.eye(3, dtype="float32")

    def train(augment):
        loopax.utils.set_random_seed(0)
        steps = [loopax.layers.RandomShear(0.3, 0.3, seed=1),
                 loopax.layers.RandomPerspective(0.8, 0.5, seed=2)]
        model = loopax.Sequential([loopax.Input((6, 8, 2))] + (steps if augment else [])
                                  + [loopax.layers.Flatten(), loopax.layers.Dense(3)])
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
        model.fit(IMAGES / 255, y, batch_size=1, epochs=2, verbose=0)
        return model

    plain, augmented, again = train(False), train(True), train(True)
    assert not np.allclose(plain.get_weights()[0], augmented.get_weights()[0])
    for a, b in zip(augmented.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
    kernel, bias = augmented.layers[-1].get_weights()
    np.testing.assert_allclose(augmented.predict(IMAGES / 255, verbose=0),
                               (IMAGES / 255).reshape(3, -1) @ kernel + bias, rtol=1e-4,
                               atol=1e-4)
