"""U-Net-style segmentation as in keras.io's Oxford-pets example, shrunk:
separable convolutions with BatchNormalization, residual projections added,
Conv2DTranspose and UpSampling2D on the way up, a per-pixel softmax trained
with sparse categorical crossentropy; compared with Keras.

Convolutions followed by BatchNormalization have no bias (keras.io's have
one): such a bias has a zero gradient up to rounding, which Adam scales into
full-size steps, so its value is rounding noise no two libraries share."""

import numpy as np
from twins import assert_same_results, falls, run_twins


def shapes_and_masks(rng, n):
    """(n, 16, 16, 3) images holding one bright rectangle, (n, 16, 16, 1) masks:
    0 background, 1 rectangle, 2 its border."""
    images = rng.random((n, 16, 16, 3)).astype("float32") * 0.2
    masks = np.zeros((n, 16, 16, 1), "int32")
    for i, (r, c) in enumerate(rng.integers(0, 8, (n, 2))):
        masks[i, r:r + 8, c:c + 8] = 2
        masks[i, r + 1:r + 7, c + 1:c + 7] = 1
        images[i, r:r + 8, c:c + 8] += 0.8
    return images, masks


def unet_script(keras, same_weights):
    layers = keras.layers
    images, masks = shapes_and_masks(np.random.default_rng(2), 32)

    inputs = keras.Input(shape=(16, 16, 3))
    x = layers.Conv2D(8, 3, strides=2, padding="same", use_bias=False)(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous_block_activation = x
    for filters in [16]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        residual = layers.Conv2D(filters, 1, strides=2, padding="same")(
            previous_block_activation)
        x = layers.add([x, residual])
        previous_block_activation = x
    for filters in [16, 8]:
        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.UpSampling2D(2)(x)
        residual = layers.UpSampling2D(2)(previous_block_activation)
        residual = layers.Conv2D(filters, 1, padding="same")(residual)
        x = layers.add([x, residual])
        previous_block_activation = x
    outputs = layers.Conv2D(3, 3, activation="softmax", padding="same")(x)
    model = same_weights(keras.Model(inputs, outputs))

    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(images, masks, batch_size=8, epochs=3, shuffle=False, verbose=0)
    predicted = model.predict(images[:2], verbose=0)
    return {"history": history.history, "probabilities": predicted,
            "segmentation": np.argmax(predicted, axis=-1)}


def test_unet_segmentation_matches_keras():
    ours, theirs = run_twins(unet_script)
    # Pixel accuracy counts argmaxes: a near-tie may round the other way in
    # one of the 32 * 256 pixels, so it agrees to one pixel.
    one_pixel = 1 / (32 * 16 * 16)
    np.testing.assert_allclose(ours["history"].pop("accuracy"),
                               theirs["history"].pop("accuracy"), atol=1.01 * one_pixel)
    assert (ours.pop("segmentation") == theirs.pop("segmentation")).mean() > 0.99
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
