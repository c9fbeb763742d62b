"""AugMix against Keras 3.15.1 itself.

Keras picks the chains' augmentations with Python's `random` and loopax with its
seed generator, so outputs are compared where they are determined: transformations
Keras drew (and one built to hold every augmentation) replayed through both layers'
`transform_images`; loopax's own draws, rewritten in Keras's form, replayed through
Keras's layer; the draws' distribution against closed forms (Dirichlet / Beta
moments, uniform picks). Also configs, seeds, inference, dict inputs and fit().
Tolerance: atol 1e-3 on 0..255 pixels (float32).
"""

import random

import jax
import numpy as np
import pytest
from compile_once import identical_programs_compiled_once

import loopax

keras = pytest.importorskip("keras")

rng = np.random.default_rng(11)
IMAGES = (rng.random((2, 6, 7, 3)) * 255).astype("float32")
NAMES = ("random_shear", "random_translation", "random_rotation", "random_posterization",
         "solarization", "auto_contrast", "equalization", "random_brightness",
         "random_color_degeneration", "random_contrast", "random_sharpness")
CASES = [pytest.param({}, id="defaults"),
         pytest.param({"all_ops": False, "value_range": (0, 1), "interpolation": "nearest",
                       "factor": 0.8, "num_chains": 2, "chain_depth": 2},
                      id="seven_ops-unit_range-nearest")]


def _images_for(kwargs):
    return IMAGES / 255 if kwargs.get("value_range") == (0, 1) else IMAGES


def _close(ours, keras_layer, x, transformation, message=""):
    expected = np.asarray(keras_layer.transform_images(x, transformation))
    np.testing.assert_allclose(np.asarray(ours), expected, atol=1e-3, err_msg=message)


# Keras's draws for Python seeds 1, 2 and 19 hold every augmentation of each case
# (shorter chains too) and Equalization once per case: its eager 256-bin loop takes
# seconds per application on Keras's side (seeds 0-2 held it three times and no
# posterization; Equalization twice in a row is test_image_augmentation's few_levels).
@pytest.mark.parametrize("kwargs", CASES)
@pytest.mark.parametrize("python_seed", [1, 2, 19], ids=lambda s: f"draw{s}")
def test_keras_drawn_transformations_replay(kwargs, python_seed):
    keras_layer, ours = keras.layers.AugMix(**kwargs, seed=1), loopax.layers.AugMix(**kwargs)
    x = _images_for(kwargs)
    random.seed(python_seed)
    transformation = keras_layer.get_random_transformation(x, training=True)
    _close(ours.transform_images(x, transformation), keras_layer, x, transformation)


def test_every_augmentation_replays_in_a_chain():
    keras_layer, ours = keras.layers.AugMix(num_chains=4, seed=2), loopax.layers.AugMix()
    drawn = keras_layer.get_random_transformation(IMAGES, training=True)
    chains = [NAMES[0:3], NAMES[3:6], NAMES[6:9], NAMES[9:11]]
    transformation = dict(drawn, chain_transforms=[
        [{"layer_name": name, "transformation": getattr(keras_layer, name)
          .get_random_transformation(IMAGES, training=True)} for name in chain]
        for chain in chains])
    _close(ours.transform_images(IMAGES, transformation), keras_layer, IMAGES, transformation)


def _as_keras(transformation, names):
    """loopax's own draw (traced picks, every augmentation's parameters) in Keras's form."""
    chains = [[{"layer_name": names[int(step["layer_index"])],
                "transformation": step["transforms"][names[int(step["layer_index"])]]}
               for step in chain if int(step["layer_index"]) < len(names)]
              for chain in transformation["chain_transforms"]]
    return dict(transformation, chain_transforms=chains)


@pytest.mark.parametrize("kwargs", CASES)
def test_own_draws_equal_keras_applying_the_same_picks(kwargs):
    keras_layer, ours = keras.layers.AugMix(**kwargs), loopax.layers.AugMix(**kwargs, seed=4)
    x = _images_for(kwargs)
    names = NAMES if kwargs.get("all_ops", True) else NAMES[:7]
    transformation = ours.get_random_transformation(x, training=True)
    # Compiled (the picks traced, as in fit): one program instead of one per switch.
    applied = jax.jit(lambda drawn: ours.transform_images(x, drawn))(transformation)
    _close(applied, keras_layer, x, _as_keras(transformation, names))


def test_draws_follow_dirichlet_beta_and_uniform_picks():
    # Depth 2 and 300 draws: the same 1800 picks as depth 4 and 150 draws, twice the
    # Dirichlet/Beta samples, and half the compiled program (each step draws every
    # augmentation's parameters; the picks are per step, whatever the depth).
    layer = loopax.layers.AugMix(num_chains=3, chain_depth=2, all_ops=False, alpha=2.0,
                                 seed=5)
    x = IMAGES[:1]

    def draw():
        """One draw's weights, mix and picks (the parameters are not checked here)."""
        drawn = layer.get_random_transformation(x)
        return (drawn["chain_mixing_weights"], drawn["weight_sample"],
                [step["layer_index"] for chain in drawn["chain_transforms"] for step in chain])

    # Compiled once, the seed state carried from call to call: eagerly, each draw
    # dispatched the 42 augmentations' parameter draws op by op.
    draw = loopax.function(draw)
    draws = [draw() for _ in range(300)]
    weights = np.stack([np.asarray(w) for w, _, _ in draws])
    mixes = np.array([float(m) for _, m, _ in draws])
    picks = np.array([[int(p) for p in step_picks] for _, _, step_picks in draws]).ravel()
    k, a = 3, 2.0
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(weights.mean(axis=0), 1 / k, atol=0.04)   # Dirichlet mean
    np.testing.assert_allclose(weights.var(axis=0), (k - 1) / (k * k * (k * a + 1)),
                               rtol=0.35)
    np.testing.assert_allclose(mixes.mean(), 0.5, atol=0.05)              # Beta(2, 2)
    np.testing.assert_allclose(mixes.var(), 1 / 20, rtol=0.35)
    counts = np.bincount(picks, minlength=8)
    assert counts.shape == (8,)  # seven augmentations and "none"
    np.testing.assert_allclose(counts / picks.size, 1 / 8, atol=0.04)


def test_config_matches_keras_and_round_trips():
    kwargs = {"value_range": (0, 1), "num_chains": 2, "chain_depth": 4, "factor": 0.5,
              "alpha": 0.5, "all_ops": False, "interpolation": "nearest", "seed": 6}
    ours = loopax.layers.AugMix(**kwargs).get_config()
    theirs = keras.layers.AugMix(**kwargs).get_config()
    assert {k: ours[k] for k in [*kwargs, "data_format"]} == \
        {k: theirs[k] for k in [*kwargs, "data_format"]}
    assert loopax.layers.AugMix.from_config(ours).get_config() == ours


def test_seeded_dicts_inference_and_bad_arguments():
    kwargs = dict(num_chains=2, chain_depth=1, all_ops=False, seed=3)
    first, second = loopax.layers.AugMix(**kwargs), loopax.layers.AugMix(**kwargs)
    boxes = {"boxes": np.ones((2, 1, 4), "float32"), "labels": np.ones((2, 1), "int32")}
    out = first({"images": IMAGES, "labels": np.eye(2), "bounding_boxes": boxes})
    np.testing.assert_array_equal(np.asarray(out["images"]), np.asarray(second(IMAGES)))
    for key in ("boxes", "labels"):  # passed through, as Keras
        np.testing.assert_array_equal(np.asarray(out["bounding_boxes"][key]), boxes[key])
    np.testing.assert_array_equal(np.asarray(out["labels"]), np.eye(2))
    assert np.asarray(out["images"]).min() >= 0 and np.asarray(out["images"]).max() <= 255
    np.testing.assert_array_equal(np.asarray(first(IMAGES, training=False)), IMAGES)
    for argument, value in [("num_chains", 0), ("chain_depth", 1.5), ("factor", 2.0),
                            ("interpolation", "cubic")]:
        with pytest.raises(ValueError, match=argument):
            loopax.layers.AugMix(**{argument: value})


def test_trains_in_fit_seeded(tmp_path):
    y = np.eye(2, dtype="float32")

    def train():
        loopax.utils.set_random_seed(0)
        model = loopax.Sequential([loopax.Input((6, 7, 3)),
                                   # One chain of depth 1: several chains and steps
                                   # are checked above; each step's switch costs
                                   # seconds of XLA per built model.
                                   loopax.layers.AugMix((0, 1), num_chains=1, chain_depth=1,
                                                        all_ops=False, seed=3),
                                   loopax.layers.Flatten(), loopax.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(IMAGES / 255, y, batch_size=1, epochs=1, verbose=0)
        return model

    with identical_programs_compiled_once(tmp_path):
        first, again = train(), train()
    for a, b in zip(first.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
    kernel, bias = first.layers[-1].get_weights()
    np.testing.assert_allclose(first.predict(IMAGES / 255, verbose=0),
                               (IMAGES / 255).reshape(2, -1) @ kernel + bias, rtol=1e-4,
                               atol=1e-4)
