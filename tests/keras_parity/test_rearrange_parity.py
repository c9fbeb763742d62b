"""ops.rearrange against Keras 3.15.1 on the patterns of its documentation
(and a ViT patching one), values and gradients; bad patterns name the problem."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from keras_reference import keras

import loopax

IMAGES = np.random.default_rng(0).normal(size=(4, 6, 8, 3)).astype("float32")
PATTERNS = [
    ("b h w c -> b h w c", {}),
    ("b h w c -> (b h) w c", {}),
    ("b h w c -> h (b w) c", {}),
    ("b h w c -> b (c h w)", {}),
    ("b h w c -> c w h b", {}),
    ("b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2}),
    ("b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 4}),
    ("b (h p1) (w p2) c -> b (h w) (p1 p2 c)", {"p1": 3, "p2": 4}),
]


@pytest.mark.parametrize("pattern,lengths", PATTERNS, ids=[p for p, _ in PATTERNS])
def test_rearrange_matches_keras(pattern, lengths):
    ours = loopax.ops.rearrange(IMAGES, pattern, **lengths)
    theirs = keras.ops.rearrange(IMAGES, pattern, **lengths)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    gradient = jax.grad(lambda x: (loopax.ops.rearrange(x, pattern, **lengths)
                                   * jnp.arange(ours.size).reshape(ours.shape)).sum())(IMAGES)
    keras_gradient = jax.grad(lambda x: (keras.ops.rearrange(x, pattern, **lengths)
                                         * jnp.arange(ours.size).reshape(ours.shape)).sum())(IMAGES)
    np.testing.assert_array_equal(gradient, keras_gradient)


@pytest.mark.parametrize("pattern,lengths,match", [
    ("b h w c", {}, "input -> output"),
    ("b h w -> b h w", {}, r"3 axes.*\(4, 6, 8, 3\)"),
    ("b h w c -> b h c", {}, "same axes"),
    ("b (h1 h) w c -> b h1 h w c", {}, "all but one"),
    ("b (h1 h) w c -> b h1 h w c", {"h1": 4}, "not a multiple of 4"),
    ("b h w ... -> b h w ...", {}, "'.'"),
], ids=["no-arrow", "rank", "lost-axis", "two-unknown", "not-divisible", "ellipsis"])
def test_bad_pattern_names_the_problem(pattern, lengths, match):
    with pytest.raises(ValueError, match=match):
        loopax.ops.rearrange(IMAGES, pattern, **lengths)
