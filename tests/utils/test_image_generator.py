"""`ImageDataGenerator` (Keras's legacy API, used by the tf.data guide): batches from a
class-per-directory tree and from arrays, against the pixels Pillow decodes and NumPy
flips/rescales."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from loopax.preprocessing.image import ImageDataGenerator


@pytest.fixture
def tree(tmp_path):
    rng = np.random.default_rng(0)
    pixels = {}
    for c, name in enumerate(["daisy", "roses", "tulips"]):
        (tmp_path / name).mkdir()
        for i in range(2):
            image = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
            Image.fromarray(image).save(tmp_path / name / f"{i}.png")
            pixels[(c, i)] = image
    return tmp_path, pixels


def test_flow_from_directory_labels_and_rescales_as_keras(tree):
    root, pixels = tree
    it = ImageDataGenerator(rescale=1 / 255).flow_from_directory(
        root, target_size=(6, 5), batch_size=4, shuffle=False)
    assert it.class_indices == {"daisy": 0, "roses": 1, "tulips": 2} and len(it) == 2
    x, y = next(it)
    assert x.dtype == np.float32 and x.shape == (4, 6, 5, 3)
    np.testing.assert_array_equal(y, np.eye(3, dtype=np.float32)[[0, 0, 1, 1]])
    np.testing.assert_allclose(x[2], pixels[(1, 0)] / 255, rtol=1e-6)
    x2, y2 = next(it)   # the last, short batch; then the next epoch starts again
    assert x2.shape[0] == 2 and next(it)[1].shape == (4, 3)
    sparse = ImageDataGenerator().flow_from_directory(root, target_size=(6, 5),
                                                      class_mode="sparse", shuffle=False)
    np.testing.assert_array_equal(next(sparse)[1], [0, 0, 1, 1, 2, 2])


def test_flow_flips_rotates_and_refuses_unimplemented_options():
    x = np.arange(2 * 4 * 4 * 1, dtype=np.float32).reshape(2, 4, 4, 1)
    batch = next(ImageDataGenerator().flow(x, batch_size=2, shuffle=False))
    np.testing.assert_array_equal(batch, x)
    flipped = ImageDataGenerator(horizontal_flip=True).flow(x, np.arange(2), batch_size=2,
                                                            shuffle=False, seed=1)
    images, labels = next(flipped)
    for image, original in zip(images, x):
        assert (np.array_equal(image, original)
                or np.array_equal(image, original[:, ::-1]))
    rotated = next(ImageDataGenerator(rotation_range=90).flow(x, batch_size=2, seed=0))
    assert rotated.shape == x.shape and not np.array_equal(rotated, x)
    with pytest.raises(ValueError, match="zoom_range"):
        ImageDataGenerator(zoom_range=0.2)
