"""The tensorflow.org "Data augmentation" tutorial's tf.image part, written the way
it is, on a synthetic uint8 image in place of tf_flowers.

Deterministic ops are compared with TensorFlow 2.21's outputs (the tut_* arrays
of fixtures/image_fixture.npz, written by fixtures/make_image_fixture.py); the
stateless random ops draw other numbers than TensorFlow's (another generator),
so they are checked for TensorFlow's semantics: the same seed gives the same
image, the deltas, factors and crops lie in the documented ranges.
`tf.data.experimental.Counter()` is replaced by `Dataset.range`, and the
nested `Dataset.zip((a, (b, b)))` by `zip((a, zip((b, b))))`.
"""

from pathlib import Path

import numpy as np
from loopax.tf.keras import layers

import loopax.tf as tf

F = np.load(Path(__file__).with_name("fixtures") / "image_fixture.npz")
image = F["flower"]
IMG_SIZE = 24


def same(got, name):
    got = got.numpy()
    want = F[name]
    assert got.shape == want.shape and got.dtype == want.dtype, (name, got.shape, got.dtype)
    if want.dtype.kind in "iu":
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1, name
        assert np.mean(got == want) > 0.97, name
    else:
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=name)


def test_the_tf_image_cells_print_tensorflows_images():
    flipped = tf.image.flip_left_right(image)
    same(flipped, "tut_flipped")
    grayscaled = tf.image.rgb_to_grayscale(image)
    same(tf.squeeze(grayscaled), "tut_grayscaled")
    saturated = tf.image.adjust_saturation(image, 3)
    same(saturated, "tut_saturated")
    bright = tf.image.adjust_brightness(image, 0.4)
    same(bright, "tut_bright")
    cropped = tf.image.central_crop(image, central_fraction=0.5)
    same(cropped, "tut_cropped")
    rotated = tf.image.rot90(image)
    same(rotated, "tut_rotated")


def test_the_stateless_random_cells():
    outs = []
    for i in range(3):
        seed = (i, 0)  # tuple of size (2,)
        stateless_random_brightness = tf.image.stateless_random_brightness(
            image, max_delta=0.95, seed=seed)
        outs.append(stateless_random_brightness.numpy())
        # uint8 in, uint8 out: image + delta * 255 (delta in [-0.95, 0.95)), saturated
        assert outs[-1].dtype == np.uint8 and outs[-1].shape == image.shape
    assert len({o.tobytes() for o in outs}) == 3
    np.testing.assert_array_equal(outs[1], tf.image.stateless_random_brightness(
        image, max_delta=0.95, seed=(1, 0)).numpy())
    for i in range(3):
        seed = (i, 0)
        stateless_random_contrast = tf.image.stateless_random_contrast(
            image, lower=0.1, upper=0.9, seed=seed)
        out = stateless_random_contrast.numpy().astype(float)
        # contrast factor < 1 pulls every channel towards its mean
        assert out.std(axis=(0, 1)).max() < image.astype(float).std(axis=(0, 1)).min() * 0.95
    for i in range(3):
        seed = (i, 0)
        stateless_random_crop = tf.image.stateless_random_crop(
            image, size=[30, 42, 3], seed=seed)
        crop = stateless_random_crop.numpy()
        assert any(np.array_equal(crop, image[r:r + 30, c:c + 42])
                   for r in range(11) for c in range(15))


def test_the_stateless_augmentation_pipeline_trains():
    def resize_and_rescale(image, label):
        image = tf.cast(image, tf.float32)
        image = tf.image.resize(image, [IMG_SIZE, IMG_SIZE])
        image = (image / 255.0)
        return image, label

    resized, _ = resize_and_rescale(image, 0)
    same(resized, "tut_resize_and_rescale")
    same(tf.image.resize_with_crop_or_pad(resized, IMG_SIZE + 6, IMG_SIZE + 6),
         "tut_crop_or_pad")

    def augment(image_label, seed):
        image, label = image_label
        image, label = resize_and_rescale(image, label)
        image = tf.image.resize_with_crop_or_pad(image, IMG_SIZE + 6, IMG_SIZE + 6)
        # Make a new seed.
        new_seed = tf.random.split(seed, num=1)[0, :]
        # Random crop back to the original size.
        image = tf.image.stateless_random_crop(
            image, size=[IMG_SIZE, IMG_SIZE, 3], seed=seed)
        # Random brightness.
        image = tf.image.stateless_random_brightness(
            image, max_delta=0.5, seed=new_seed)
        image = tf.clip_by_value(image, 0, 1)
        return image, label

    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(12, 40, 56, 3)).astype("uint8")
    labels = (images[..., 0].mean(axis=(1, 2)) > 127.5).astype("int64")
    train_datasets = tf.data.Dataset.from_tensor_slices((images, labels))
    counter = tf.data.Dataset.range(10**6)   # tf.data.experimental.Counter() in the tutorial
    # the tutorial zips a nested tuple, (train_datasets, (counter, counter)), which
    # loopax's Dataset.zip does not take yet: the inner pair is zipped first here
    train_ds = tf.data.Dataset.zip((train_datasets, tf.data.Dataset.zip((counter, counter))))
    AUTOTUNE = tf.data.AUTOTUNE
    batch_size = 4
    train_ds = (train_ds.shuffle(1000).map(augment, num_parallel_calls=AUTOTUNE)
                .batch(batch_size).prefetch(AUTOTUNE))
    batches = list(train_ds)
    assert len(batches) == 3
    x, y = batches[0]
    assert x.shape == (4, IMG_SIZE, IMG_SIZE, 3) and 0 <= x.numpy().min() <= x.numpy().max() <= 1
    # the same (image, seed) pair gives the same augmented image
    a, _ = augment((images[0], labels[0]), (5, 5))
    b, _ = augment((images[0], labels[0]), tf.constant([5, 5]))
    np.testing.assert_array_equal(a.numpy(), b.numpy())

    model = tf.keras.Sequential([
        tf.keras.Input((IMG_SIZE, IMG_SIZE, 3)),
        layers.Conv2D(4, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(2)])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(train_ds, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
