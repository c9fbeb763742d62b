"""Involutional networks as in keras.io's involution example, shrunk: an
Involution layer whose `build` creates a kernel-generating Sequential and
Reshape layers, and whose `call` multiplies the generated kernels with
`ops.image.extract_patches` of the input. One layer is built by hand
(`layer.build(shape)`, then `set_weights`) before its first call, as users
do to load weights; then a three-involution classifier is trained. Run with
loopax and Keras 3 from the same weights."""

import numpy as np
from twins import assert_same_results, run_twins


def involution_class(keras):
    ops = keras.ops

    class Involution(keras.layers.Layer):
        def __init__(self, channel, group_number, kernel_size, stride, reduction_ratio,
                     name):
            super().__init__(name=name)
            self.channel = channel
            self.group_number = group_number
            self.kernel_size = kernel_size
            self.stride = stride
            self.reduction_ratio = reduction_ratio

        def build(self, input_shape):
            (_, height, width, num_channels) = input_shape
            height = height // self.stride
            width = width // self.stride
            self.stride_layer = (
                keras.layers.AveragePooling2D(pool_size=self.stride, strides=self.stride,
                                              padding="same")
                if self.stride > 1 else keras.layers.Identity())
            self.kernel_gen = keras.Sequential([
                keras.layers.Conv2D(filters=self.channel // self.reduction_ratio,
                                    kernel_size=1),
                keras.layers.BatchNormalization(),
                keras.layers.ReLU(),
                keras.layers.Conv2D(
                    filters=self.kernel_size * self.kernel_size * self.group_number,
                    kernel_size=1),
            ])
            self.kernel_reshape = keras.layers.Reshape(
                (height, width, self.kernel_size * self.kernel_size, 1, self.group_number))
            self.input_patches_reshape = keras.layers.Reshape(
                (height, width, self.kernel_size * self.kernel_size,
                 num_channels // self.group_number, self.group_number))
            self.output_reshape = keras.layers.Reshape((height, width, num_channels))

        def call(self, x):
            kernel = self.kernel_reshape(self.kernel_gen(self.stride_layer(x)))
            patches = ops.image.extract_patches(x, size=self.kernel_size,
                                                strides=self.stride, padding="same")
            patches = self.input_patches_reshape(patches)
            output = ops.sum(ops.multiply(kernel, patches), axis=3)
            return self.output_reshape(output), kernel

    return Involution


def involution_script(keras, same_weights):
    Involution = involution_class(keras)
    rng = np.random.default_rng(0)
    images = rng.random((48, 16, 16, 3)).astype("float32")
    labels = rng.integers(0, 10, (48, 1))

    # Built by hand, given weights, then called: the call keeps those weights.
    layer = Involution(channel=3, group_number=1, kernel_size=3, stride=2,
                       reduction_ratio=1, name="inv_0")
    layer.build((None, 16, 16, 3))
    layer.kernel_gen.build((None, 8, 8, 3))
    given = [np.abs(rng.standard_normal(w.shape)).astype("float32") * 0.5
             for w in layer.get_weights()]
    layer.set_weights(given)
    by_hand, by_hand_kernel = layer(images[:4])

    inputs = keras.Input(shape=(16, 16, 3))
    x, _ = Involution(channel=3, group_number=1, kernel_size=3, stride=1,
                      reduction_ratio=2, name="inv_1")(inputs)
    x = keras.layers.ReLU()(x)
    x = keras.layers.MaxPooling2D((2, 2))(x)
    x, _ = Involution(channel=3, group_number=1, kernel_size=3, stride=1,
                      reduction_ratio=2, name="inv_2")(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(16, activation="relu")(x)
    outputs = keras.layers.Dense(10)(x)
    model = same_weights(keras.Model(inputs=[inputs], outputs=[outputs], name="inv_model"))
    # SGD, not the example's Adam: the bias of the convolution before BatchNormalization
    # has a zero gradient up to rounding, which Adam turns into full steps.
    model.compile(optimizer=keras.optimizers.SGD(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(images, labels, batch_size=16, epochs=2, shuffle=False, verbose=0)
    kernels = keras.Model(model.input, model.get_layer("inv_2").output[1])
    return {"by_hand": np.asarray(by_hand), "by_hand_kernel": np.asarray(by_hand_kernel),
            "history": history.history,
            "kernel_sums": np.asarray(kernels.predict(images[:2], verbose=0)).sum((-1, -2, -3)),
            "predictions": model.predict(images[:4], verbose=0)}


def test_involution_layer_built_by_hand_and_trained_as_keras():
    ours, theirs = run_twins(involution_script)
    assert_same_results(ours, theirs, rtol=2e-4, atol=1e-5)
    assert np.abs(ours["by_hand"]).sum() > 0   # the weights given, not a rebuilt layer's
