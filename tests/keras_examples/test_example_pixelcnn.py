"""PixelCNN as in keras.io's pixelcnn example, shrunk: masked convolutions
(a Conv2D whose kernel is multiplied by a mask inside `call`, by
`kernel.assign`), residual blocks, binary crossentropy on binarized images,
then pixel-by-pixel sampling from `predict` (uniform draws from NumPy, the
same for both libraries); compared with Keras."""

import numpy as np
from twins import assert_same_results, falls, run_twins

SIZE = 6


def strokes(rng, n):
    """(n, 6, 6, 1) binary images: a vertical or horizontal stroke."""
    images = np.zeros((n, SIZE, SIZE, 1), "float32")
    for i, (vertical, k) in enumerate(zip(rng.integers(0, 2, n), rng.integers(1, SIZE - 1, n))):
        if vertical:
            images[i, :, k] = 1.0
        else:
            images[i, k, :] = 1.0
    return images


def pixelcnn_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops
    data = strokes(np.random.default_rng(8), 32)

    class PixelConvLayer(layers.Layer):
        def __init__(self, mask_type, **kwargs):
            super().__init__()
            self.mask_type = mask_type
            self.conv = layers.Conv2D(**kwargs)

        def build(self, input_shape):
            self.conv.build(input_shape)
            kernel_shape = ops.shape(self.conv.kernel)
            self.mask = np.zeros(shape=kernel_shape)
            self.mask[: kernel_shape[0] // 2, ...] = 1.0
            self.mask[kernel_shape[0] // 2, : kernel_shape[1] // 2, ...] = 1.0
            if self.mask_type == "B":
                self.mask[kernel_shape[0] // 2, kernel_shape[1] // 2, ...] = 1.0

        def call(self, inputs):
            self.conv.kernel.assign(self.conv.kernel * self.mask)
            return self.conv(inputs)

    class ResidualBlock(layers.Layer):
        def __init__(self, filters, **kwargs):
            super().__init__(**kwargs)
            self.conv1 = layers.Conv2D(filters=filters, kernel_size=1, activation="relu")
            self.pixel_conv = PixelConvLayer(mask_type="B", filters=filters // 2, kernel_size=3,
                                             activation="relu", padding="same")
            self.conv2 = layers.Conv2D(filters=filters, kernel_size=1, activation="relu")

        def call(self, inputs):
            x = self.conv1(inputs)
            x = self.pixel_conv(x)
            x = self.conv2(x)
            return layers.add([inputs, x])

    inputs = keras.Input(shape=(SIZE, SIZE, 1))
    x = PixelConvLayer(mask_type="A", filters=8, kernel_size=5, activation="relu",
                       padding="same")(inputs)
    x = ResidualBlock(filters=8)(x)
    x = PixelConvLayer(mask_type="B", filters=8, kernel_size=1, strides=1, activation="relu",
                       padding="valid")(x)
    out = layers.Conv2D(filters=1, kernel_size=1, strides=1, activation="sigmoid",
                        padding="valid")(x)
    pixel_cnn = same_weights(keras.Model(inputs, out))
    pixel_cnn.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                      loss="binary_crossentropy")
    history = pixel_cnn.fit(x=data, y=data, batch_size=8, epochs=3, validation_split=0.25,
                            shuffle=False, verbose=0)

    rng = np.random.default_rng(9)
    pixels = np.zeros(shape=(2,) + pixel_cnn.input_shape[1:], dtype="float32")
    batch, rows, cols, channels = pixels.shape
    for row in range(rows):
        for col in range(cols):
            for channel in range(channels):
                probs = pixel_cnn.predict(pixels, verbose=0)[:, row, col, channel]
                pixels[:, row, col, channel] = np.ceil(probs - rng.uniform(size=probs.shape))
    return {"history": history.history, "samples": pixels,
            "first_pixel": pixel_cnn.predict(data[:4], verbose=0)[:, 0, 0, 0]}


def test_pixelcnn_masked_convolutions_and_sampling_matches_keras():
    ours, theirs = run_twins(pixelcnn_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
    # The masks held: the first pixel sees no input pixel, so its prediction is
    # the same for every image.
    np.testing.assert_allclose(ours["first_pixel"], ours["first_pixel"][0], rtol=1e-6)
