"""RandomElasticTransform against Keras 3.15.1 and against loopax's own
`ops.image.elastic_transform`.

Keras draws its displacement field from one key for both axes (its pixels all move
along the diagonal; docs/keras_differences.md), so the fields differ by design.
Compared instead: the deterministic transform given the sampled parameters (the
layer equals `ops.image.elastic_transform` with Keras's alpha/sigma formula, where
applied, then clipped), the identity/clip path with Keras, the displacement spread
with Keras's on ramp images, the apply probability against its closed form, configs,
seeds, inference and fit(). Tolerance: atol 1e-3 on 0..255 pixels (float32).
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

rng = np.random.default_rng(12)
IMAGES = (rng.random((3, 16, 20, 3)) * 255).astype("float32")


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("scale", [0.4, 1.0], ids=lambda s: f"scale{s}")
def test_transform_is_elastic_transform_with_keras_parameters(data_format, scale):
    x = IMAGES if data_format == "channels_last" else IMAGES.transpose(0, 3, 1, 2)
    layer = loopax.layers.RandomElasticTransform(factor=(0.5, 0.5), scale=(scale, scale),
                                                 value_range=(0, 200), seed=1,
                                                 data_format=data_format)
    transformation = layer.get_random_transformation(x)
    apply = np.array([True, False, True])
    transformation["apply_transform"] = apply
    out = np.asarray(layer.transform_images(x, transformation))
    alpha, sigma = 0.1 * scale * 20, 0.05 * scale * 16  # Keras: max(h, w), min(h, w)
    warped = np.asarray(loopax.ops.image.elastic_transform(
        x, alpha, sigma, seed=transformation["seed"], data_format=data_format))
    expected = np.clip(np.where(apply[:, None, None, None], warped, x), 0, 200)
    np.testing.assert_allclose(out, expected, atol=1e-3)
    assert not np.allclose(out[0], np.clip(x[0], 0, 200))  # distorted


def test_not_applied_images_equal_keras():
    # factor 0: Keras and loopax both leave every image as it is (only clipped).
    for kwargs in ({"factor": 0.0}, {"scale": 0.0}):
        ours = loopax.layers.RandomElasticTransform(**kwargs, value_range=(0, 100), seed=2)
        theirs = keras.layers.RandomElasticTransform(**kwargs, value_range=(0, 100), seed=2)
        np.testing.assert_allclose(np.asarray(ours(IMAGES)), np.asarray(theirs(IMAGES)),
                                   atol=1e-3)


def test_displacement_spread_matches_keras_on_a_ramp():
    # Each pixel of a horizontal ramp reads the column it was moved to: out - in is
    # the x displacement. Its spread over the interior follows alpha and sigma alike.
    ramp = np.broadcast_to(np.arange(64, dtype="float32")[None, None, :, None],
                           (8, 64, 64, 1)).copy()
    spreads = []
    for module in (loopax, keras):
        layer = module.layers.RandomElasticTransform(factor=(1.0, 1.0), scale=(0.5, 0.5),
                                                     value_range=(-1000, 1000), seed=3)
        shift = np.asarray(layer(ramp)) - ramp
        spreads.append(shift[:, 8:-8, 8:-8].std())
    assert spreads[0] > 0.05
    np.testing.assert_allclose(spreads[0], spreads[1], rtol=0.35)


def test_apply_probability_follows_factor():
    layer = loopax.layers.RandomElasticTransform(factor=(0.2, 0.6), seed=4)
    applied = np.concatenate([np.asarray(layer.get_random_transformation(IMAGES[:1].repeat(
        50, 0))["apply_transform"]) for _ in range(8)])
    np.testing.assert_allclose(applied.mean(), 0.4, atol=0.06)  # E[U(0.2, 0.6)]
    factors = [float(layer.get_random_transformation(IMAGES)["distortion_factor"])
               for _ in range(5)]
    assert all(0 <= f <= 1 for f in factors) and len(set(factors)) == 5


def test_config_matches_keras_seeded_and_inference():
    kwargs = dict(factor=(0.1, 0.9), scale=(0.2, 0.5), interpolation="nearest",
                  fill_mode="constant", fill_value=3.0, value_range=(0, 1), seed=5)
    ours, theirs = (m.layers.RandomElasticTransform(**kwargs).get_config()
                    for m in (loopax, keras))
    assert {k: ours[k] for k in [*kwargs, "data_format"]} == \
        {k: tuple(theirs[k]) if isinstance(theirs[k], list) else theirs[k]
         for k in [*kwargs, "data_format"]}
    again = loopax.layers.RandomElasticTransform.from_config(ours)
    assert again.get_config() == ours
    first = loopax.layers.RandomElasticTransform(seed=6)
    np.testing.assert_array_equal(np.asarray(first(IMAGES)),
                                  np.asarray(loopax.layers.RandomElasticTransform(seed=6)(IMAGES)))
    np.testing.assert_array_equal(np.asarray(first(IMAGES, training=False)), IMAGES)
    for argument, value in [("factor", 1.5), ("scale", -2.0), ("fill_mode", "mirror"),
                            ("interpolation", "cubic")]:
        with pytest.raises(ValueError, match=argument):
            loopax.layers.RandomElasticTransform(**{argument: value})


def test_trains_in_fit_seeded():
    y = np.eye(3, dtype="float32")

    def train():
        loopax.utils.set_random_seed(0)
        model = loopax.Sequential([loopax.Input((16, 20, 3)),
                                   loopax.layers.RandomElasticTransform(value_range=(0, 1),
                                                                        seed=3),
                                   loopax.layers.Flatten(), loopax.layers.Dense(3)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(IMAGES / 255, y, batch_size=1, epochs=1, verbose=0)
        return model

    first, again = train(), train()
    for a, b in zip(first.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
