"""Three keras.io "Keras recipes", shrunk to synthetic data and run with loopax
and Keras 3 from the same weights: the Antirectifier custom layer, the
StandardizedConv2D layers of "customizing the convolution operation of a
Conv2D layer" (`convolution_op` overridden, and called from `call`), and the
mixture density network of "approximating non-function mappings" (a layer
that lists its sublayers' weights itself, a mixture negative log-likelihood
as the loss, EarlyStopping and ReduceLROnPlateau)."""

import math

import numpy as np
from twins import assert_same_results, falls, run_twins


def digits(rng, n, flat):
    """MNIST-shaped images in [0, 1] and labels 0-9, drawn at random."""
    images = rng.integers(0, 256, (n, 28, 28)).astype("float32") / 255
    labels = rng.integers(0, 10, n)
    return (images.reshape(n, 784) if flat else images[..., None]), labels


def antirectifier_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops

    class Antirectifier(layers.Layer):
        def __init__(self, initializer="he_normal", **kwargs):
            super().__init__(**kwargs)
            self.initializer = keras.initializers.get(initializer)

        def build(self, input_shape):
            output_dim = input_shape[-1]
            self.kernel = self.add_weight(shape=(output_dim * 2, output_dim),
                                          initializer=self.initializer, name="kernel")

        def call(self, inputs):
            inputs -= ops.mean(inputs, axis=-1, keepdims=True)
            concatenated = ops.concatenate([ops.relu(inputs), ops.relu(-inputs)], axis=-1)
            return ops.matmul(concatenated, self.kernel)

        def get_config(self):
            return {**super().get_config(),
                    "initializer": keras.initializers.serialize(self.initializer)}

    x, y = digits(np.random.default_rng(0), 96, flat=True)
    model = same_weights(keras.Sequential([
        keras.Input(shape=(784,)), layers.Dense(32), Antirectifier(), layers.Dense(32),
        Antirectifier(), layers.Dropout(0.0), layers.Dense(10)]))
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=keras.optimizers.RMSprop(1e-3),
                  metrics=[keras.metrics.SparseCategoricalAccuracy()])
    history = model.fit(x[:64], y[:64], batch_size=16, epochs=3, validation_split=0.25,
                        shuffle=False, verbose=0)
    layer_config = model.layers[1].get_config()
    return {"history": history.history, "evaluate": model.evaluate(x[64:], y[64:], verbose=0),
            "initializer": layer_config["initializer"]["class_name"]}


def standardized_conv_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops

    def standardized(kernel):
        kernel = ops.convert_to_tensor(kernel)
        mean, var = ops.moments(kernel, axes=[0, 1, 2], keepdims=True)
        return (kernel - mean) / ops.sqrt(var + 1e-10)

    class StandardizedConv2DWithOverride(layers.Conv2D):
        def convolution_op(self, inputs, kernel):
            return ops.conv(inputs, standardized(kernel), padding="valid",
                            strides=list(self.strides))

    class StandardizedConv2DWithCall(layers.Conv2D):
        def call(self, inputs):
            result = self.convolution_op(inputs, standardized(self.kernel))
            return result + self.bias if self.use_bias else result

    x, y = digits(np.random.default_rng(1), 48, flat=False)
    model = same_weights(keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        StandardizedConv2DWithCall(4, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        StandardizedConv2DWithOverride(8, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(), layers.Dense(10, activation="softmax")]))
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(1e-3),
                  metrics=["accuracy"])
    targets = keras.utils.to_categorical(y, 10)
    history = model.fit(x, targets, batch_size=16, epochs=2, validation_split=0.25,
                        shuffle=False, verbose=0)
    return {"history": history.history, "predictions": model.predict(x[:4], verbose=0)}


def noisy_spirals(rng, n=64, spirals=4):
    """x -> y samples from overlapping spirals: several y for one x."""
    t = np.linspace(0, 360, n)
    xs, ys = [], []
    for _ in range(spirals):
        x0, y0 = rng.uniform(-50, 50, 2)
        xs.append(t / 360 * np.cos(t / 90 * np.pi) * 5 + x0 + rng.uniform(-0.1, 0.1, n))
        ys.append(t / 360 * np.sin(t / 90 * np.pi) * 5 + y0 + rng.uniform(-0.1, 0.1, n))
    x, y = np.concatenate(xs), np.concatenate(ys)
    scale = lambda v: (v - v.min()) / (v.max() - v.min()) * 10 - 5
    return scale(x)[:, None].astype("float32"), scale(y).astype("float32")


def mixture_density_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops

    def elu_plus_one_plus_epsilon(x):
        return keras.activations.elu(x) + 1 + keras.backend.epsilon()

    class MixtureDensityOutput(layers.Layer):
        def __init__(self, output_dimension, num_mixtures, **kwargs):
            super().__init__(**kwargs)
            self.output_dim, self.num_mix = output_dimension, num_mixtures
            self.mdn_mus = layers.Dense(num_mixtures * output_dimension, name="mdn_mus")
            self.mdn_sigmas = layers.Dense(num_mixtures * output_dimension,
                                           activation=elu_plus_one_plus_epsilon,
                                           name="mdn_sigmas")
            self.mdn_pi = layers.Dense(num_mixtures, name="mdn_pi")

        def build(self, input_shape):
            self.mdn_mus.build(input_shape)
            self.mdn_sigmas.build(input_shape)
            self.mdn_pi.build(input_shape)
            super().build(input_shape)

        @property
        def trainable_weights(self):
            return (self.mdn_mus.trainable_weights + self.mdn_sigmas.trainable_weights
                    + self.mdn_pi.trainable_weights)

        @property
        def non_trainable_weights(self):
            return (self.mdn_mus.non_trainable_weights + self.mdn_sigmas.non_trainable_weights
                    + self.mdn_pi.non_trainable_weights)

        def call(self, x, mask=None):
            return layers.concatenate([self.mdn_mus(x), self.mdn_sigmas(x), self.mdn_pi(x)])

    def mixture_loss(y_true, y_pred, mixes=5):
        """-log p(y) under the predicted Gaussian mixture (tfp's Mixture.log_prob)."""
        y_true = ops.reshape(y_true, [-1, 1])
        mu, sigma, pi = ops.split(ops.reshape(y_pred, [-1, 3 * mixes]), [mixes, 2 * mixes],
                                  axis=-1)
        z = (y_true - mu) / sigma
        log_normal = -0.5 * z**2 - ops.log(sigma) - 0.5 * math.log(2 * math.pi)
        return -ops.mean(ops.logsumexp(ops.log_softmax(pi, axis=-1) + log_normal, axis=-1))

    x, y = noisy_spirals(np.random.default_rng(2))
    model = same_weights(keras.Sequential([
        keras.Input(shape=(1,)), layers.Dense(16, activation="relu"),
        layers.Dense(16, activation="relu"), MixtureDensityOutput(1, 5)]))
    model.compile(loss=mixture_loss, optimizer=keras.optimizers.Adam(1e-2))
    callbacks = [keras.callbacks.EarlyStopping(monitor="loss", patience=2,
                                               restore_best_weights=True),
                 keras.callbacks.ReduceLROnPlateau(monitor="loss", patience=1)]
    history = model.fit(x, y, batch_size=32, epochs=6, validation_split=0.25, shuffle=False,
                        callbacks=callbacks, verbose=0)
    return {"history": history.history, "parameters": model.predict(x[:5], verbose=0),
            "weights": len(model.trainable_weights)}


def test_antirectifier_recipe_matches_keras():
    ours, theirs = run_twins(antirectifier_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])


def test_standardized_conv2d_recipe_matches_keras():
    ours, theirs = run_twins(standardized_conv_script)
    assert_same_results(ours, theirs, rtol=1e-3, atol=1e-5)
    assert falls(ours["history"])


def test_mixture_density_network_recipe_matches_keras():
    ours, theirs = run_twins(mixture_density_script)
    assert_same_results(ours, theirs, rtol=1e-3, atol=1e-5)
    assert falls(ours["history"])
