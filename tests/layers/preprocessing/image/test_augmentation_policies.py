"""RandAugment against Keras 3.15.1 itself: a transformation Keras drew (its
eleven sub-transformations) replayed through both layers' `transform_images`
with every augmentation picked in turn; configs both ways; same seed -> same
output; the identity at inference; training in fit(). Tolerance: atol 1e-3 on
0..255 pixels (float32).
"""

import jax
import numpy as np
import pytest
from compile_once import identical_programs_compiled_once

import loopax

keras = pytest.importorskip("keras")

rng = np.random.default_rng(8)
IMAGES = (rng.random((3, 6, 7, 3)) * 255).astype("float32")
CASES = [pytest.param({}, id="defaults"),
         pytest.param({"num_ops": 3, "factor": 0.8, "value_range": (0, 1),
                       "interpolation": "nearest"}, id="three_ops-unit_range-nearest"),
         pytest.param({"factor": (0.2, 0.6), "data_format": "channels_first"},
                      id="factor_range-channels_first")]


def _images_for(kwargs):
    x = IMAGES / 255 if kwargs.get("value_range") == (0, 1) else IMAGES
    return x.transpose(0, 3, 1, 2) if kwargs.get("data_format") == "channels_first" else x


@pytest.mark.parametrize("kwargs", CASES)
def test_every_augmentation_of_a_keras_drawn_transformation_matches_keras(kwargs):
    keras_layer = keras.layers.RandAugment(**kwargs, seed=1)
    loopax_layer = loopax.layers.RandAugment(**kwargs)
    x = _images_for(kwargs)
    transformation = keras_layer.get_random_transformation(x, training=True)
    # One compiled program, the picks traced (as in fit): eagerly, every call would
    # compile the whole eleven-branch switch again.
    ours = jax.jit(lambda transforms, picks: loopax_layer.transform_images(
        x, {"transforms": transforms, "layer_idxes": picks}))
    num_ops = kwargs.get("num_ops", 2)
    picks = np.array([[(first + 4 * i) % 11 for i in range(num_ops)] for first in range(11)],
                     "int32")
    if kwargs.get("data_format") == "channels_first":
        # Keras's AutoContrast: test_image_augmentation's channels-first test.
        picks = picks[~(picks == 9).any(axis=1)]
    # Keras's layer over every pick at once (vmap: the same ops on the same values, op by
    # op): its first step, on the undrawn images, runs once instead of once per pick, and
    # Equalization's 256-bin loop runs eagerly once per step, not once per step and pick.
    expected = np.asarray(jax.vmap(lambda chosen: keras_layer.transform_images(
        x, {"transforms": transformation["transforms"], "layer_idxes": chosen}))(picks))
    for chosen, keras_result in zip(picks, expected):
        np.testing.assert_allclose(ours(transformation["transforms"], chosen), keras_result,
                                   atol=1e-3, err_msg=f"augmentations {chosen}")


@pytest.mark.parametrize("kwargs", CASES[:2])
def test_config_matches_keras_seeded_and_identity_at_inference(kwargs):
    keras_layer = keras.layers.RandAugment(**kwargs, seed=6)
    first, second = (loopax.layers.RandAugment(**kwargs, seed=6) for _ in range(2))
    ignore = ("name", "dtype")
    assert {k: v for k, v in first.get_config().items() if k not in ignore} == \
        {k: v for k, v in keras_layer.get_config().items() if k not in ignore}
    assert type(first).from_config(first.get_config()).get_config() == first.get_config()
    x = _images_for(kwargs)
    out = np.asarray(first(x, training=True))
    assert out.shape == x.shape and np.all(np.isfinite(out))
    np.testing.assert_array_equal(out, second(x, training=True))
    np.testing.assert_array_equal(first(x, training=False), x)
    np.testing.assert_array_equal(keras_layer(x, training=False), x)


def test_bad_arguments_are_named():
    for module in (keras, loopax):
        with pytest.raises(ValueError, match="factor"):
            module.layers.RandAugment(factor=1.5)
    with pytest.raises(ValueError, match="num_ops"):
        loopax.layers.RandAugment(num_ops=0)


def test_rand_augment_trains_in_fit_seeded_and_passes_through_at_inference(tmp_path):
    y = np.eye(3, dtype="float32")

    def train(augment):
        loopax.utils.set_random_seed(0)
        # One op: two ops in a row, traced, are checked against Keras above, and each
        # op's eleven branches cost seconds of XLA time per built model here.
        steps = [loopax.layers.RandAugment((0, 1), num_ops=1, factor=0.5, seed=3)]
        model = loopax.Sequential([loopax.Input((6, 7, 3))] + (steps if augment else [])
                                  + [loopax.layers.Flatten(), loopax.layers.Dense(3)])
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
        model.fit(IMAGES / 255, y, batch_size=1, epochs=2, verbose=0)
        return model

    plain = train(False)
    with identical_programs_compiled_once(tmp_path):
        augmented, again = train(True), train(True)
    assert not np.allclose(plain.get_weights()[0], augmented.get_weights()[0])
    for a, b in zip(augmented.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
    kernel, bias = augmented.layers[-1].get_weights()
    np.testing.assert_allclose(augmented.predict(IMAGES / 255, verbose=0),
                               (IMAGES / 255).reshape(3, -1) @ kernel + bias, rtol=1e-4,
                               atol=1e-4)
