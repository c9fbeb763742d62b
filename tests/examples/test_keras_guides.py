"""End-to-end examples in the style of the public Keras guides, on small
synthetic data: the loss falls, and where Keras runs the same model (same
initial weights, same batches, no shuffling) the per-epoch losses match
Keras's to rtol 1e-4 (float32 training, a few dozen steps).

The text example's TextVectorization runs in the data pipeline (strings stay
on the host); Keras needs TensorFlow for that layer, so Keras is compared on
the integer sequences it produces.
"""

import inspect
from unittest import mock

import jax
import numpy as np
import pytest

import loopax
import loopax.src.random as loopax_random


def zeros(shape, *args, **kwargs):
    return np.zeros(shape, "float32")


keras = pytest.importorskip("keras")


def keras_twin(build):
    """`build(keras)` with every weight created as zeros: its weights are then
    copied in from loopax's model, and Keras's random initializers would
    compile their kernels for every new shape (seconds each) for nothing."""
    add_weight = keras.Layer.add_weight

    def zeros_weight(self, *args, **kwargs):
        weight = inspect.signature(add_weight).bind(self, *args, **kwargs)
        weight.arguments["initializer"] = "zeros"
        return add_weight(*weight.args, **weight.kwargs)

    with mock.patch.object(keras.Layer, "add_weight", zeros_weight):
        return build(keras)


def fit_both(build, x, y, compile_kwargs, epochs):
    """Loss histories of the same model built with loopax and with Keras,
    Keras starting from loopax's initial weights."""
    histories = []
    loopax.utils.set_random_seed(0)
    ours = build(loopax)
    theirs = keras_twin(build)
    theirs.set_weights(ours.get_weights())
    for model in (ours, theirs):
        model.compile(**compile_kwargs(model.__module__.split(".")[0] == "loopax"))
        history = model.fit(x, y, batch_size=16, epochs=epochs, shuffle=False, verbose=0)
        histories.append(np.asarray(history.history["loss"]))
    return histories


def test_text_classifier_text_vectorization_embedding_mask_zero_lstm():
    rng = np.random.default_rng(0)
    good, bad = ["great", "fine", "superb", "nice"], ["awful", "bad", "poor", "boring"]
    filler = ["the", "movie", "was", "plot", "and", "acting", "really"]
    texts, labels = [], []
    for i in range(64):
        label = i % 2
        words = list(rng.choice(filler, rng.integers(2, 6))) + \
            list(rng.choice(good if label else bad, rng.integers(1, 3)))
        rng.shuffle(words)
        texts.append(" ".join(words).capitalize() + "!")
        labels.append(label)
    vectorize = loopax.layers.TextVectorization(max_tokens=30, output_sequence_length=8)
    vectorize.adapt(texts)
    x = np.asarray(vectorize(np.asarray(texts)))
    y = np.asarray(labels, "float32")
    assert (x == 0).any()  # padding, masked by the Embedding below

    def build(k):
        return k.Sequential([
            k.Input((8,), dtype="int32"),
            k.layers.Embedding(30, 8, mask_zero=True),
            k.layers.LSTM(8),
            k.layers.Dense(1, activation="sigmoid"),
        ])

    ours, theirs = fit_both(build, x, y, lambda is_loopax: {
        "optimizer": (loopax if is_loopax else keras).optimizers.Adam(0.02),
        "loss": "binary_crossentropy"}, epochs=6)
    assert ours[-1] < 0.9 * ours[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)


def test_time_series_classifier_conv1d():
    rng = np.random.default_rng(1)
    t = np.linspace(0, 1, 40, dtype="float32")
    labels = rng.integers(0, 3, 96)
    freq = np.array([2.0, 5.0, 9.0], "float32")[labels]
    x = (np.sin(2 * np.pi * freq[:, None] * t) + 0.3 * rng.standard_normal((96, 40)))
    x = x.astype("float32")[..., None]

    def build(k):
        inputs = k.Input((40, 1))
        h = k.layers.Conv1D(8, 5, padding="same", activation="relu")(inputs)
        h = k.layers.BatchNormalization()(h)
        h = k.layers.Conv1D(8, 3, padding="same", activation="relu")(h)
        h = k.layers.GlobalAveragePooling1D()(h)
        return k.Model(inputs, k.layers.Dense(3, activation="softmax")(h))

    ours, theirs = fit_both(build, x, labels, lambda _: {
        "optimizer": "adam", "loss": "sparse_categorical_crossentropy"}, epochs=5)
    assert ours[-1] < 0.9 * ours[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)


def frozen_classifier(backbone, preprocess):
    """The guide's model: augmentation, preprocessing, a frozen backbone called with
    training=False, and a trainable sigmoid head."""
    backbone.trainable = False
    augment = loopax.Sequential([
        loopax.layers.RandomFlip("horizontal", seed=1),
        loopax.layers.RandomRotation(0.05, seed=2),
        loopax.layers.RandomZoom(0.1, seed=3),
    ])
    inputs = loopax.Input((32, 32, 3))
    x = augment(inputs)
    x = loopax.layers.Lambda(preprocess)(x)
    x = backbone(x, training=False)
    outputs = loopax.layers.Dense(1, activation="sigmoid")(x)
    return loopax.Model(inputs, outputs)


def assert_predict_skips_augmentation(model, backbone, preprocess, images):
    """Inference skips the augmentation: predict equals the layers applied by hand."""
    features = backbone.predict(preprocess(images), verbose=0)
    kernel, bias = model.layers[-1].get_weights()
    expected = 1 / (1 + np.exp(-(features @ kernel + bias)))
    np.testing.assert_allclose(model.predict(images, verbose=0), expected,
                               rtol=1e-4, atol=1e-5)


def bright_square_images(rng):
    labels = rng.integers(0, 2, 32)
    images = rng.random((32, 32, 32, 3)).astype("float32") * 60
    images[labels == 1, 8:24, 8:24, :] += 180  # class 1: a bright square
    return images, labels


def pretrained(backbone, rng, scale=0.02):
    """`backbone` given weights after it is built (as from a weight file)."""
    backbone.set_weights([rng.standard_normal(w.shape).astype("float32") * scale
                          for w in backbone.weights])
    return backbone


def test_image_classifier_augmentation_and_frozen_backbone():
    """Transfer learning as in the guide, on a two-block CNN backbone (a VGG in
    miniature: the same Conv2D/MaxPooling2D blocks and average pooling; VGG16 itself
    is checked below without the slow fit)."""
    rng = np.random.default_rng(2)
    images, labels = bright_square_images(rng)
    k = loopax.layers
    inputs = loopax.Input((32, 32, 3))
    x = k.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    x = k.MaxPooling2D(2)(k.Conv2D(8, 3, padding="same", activation="relu")(x))
    x = k.MaxPooling2D(2)(k.Conv2D(16, 3, padding="same", activation="relu")(x))
    backbone = pretrained(loopax.Model(inputs, k.GlobalAveragePooling2D()(x)), rng, scale=0.05)
    frozen_weights = backbone.get_weights()
    preprocess = loopax.applications.vgg16.preprocess_input
    model = frozen_classifier(backbone, preprocess)
    model.compile(optimizer=loopax.optimizers.Adam(1e-2), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(images, labels.astype("float32"), batch_size=16, epochs=3, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    # Only the head trained; the backbone's weights are as built.
    assert len(model.trainable_weights) == 2
    for after, before in zip(backbone.get_weights(), frozen_weights):
        np.testing.assert_array_equal(after, before)
    assert_predict_skips_augmentation(model, backbone, preprocess, images[:4])


def test_frozen_applications_vgg16_backbone_in_the_guide_model():
    """The guide's backbone itself: VGG16 without its top, average-pooled, at its
    smallest input size, frozen inside the augmenting model."""
    rng = np.random.default_rng(2)
    images, _ = bright_square_images(rng)
    with mock.patch.object(loopax_random, "uniform", zeros):
        backbone = loopax.applications.VGG16(weights=None, include_top=False,
                                             input_shape=(32, 32, 3), pooling="avg")
    pretrained(backbone, rng)
    preprocess = loopax.applications.vgg16.preprocess_input
    model = frozen_classifier(backbone, preprocess)
    assert len(model.trainable_weights) == 2
    assert_predict_skips_augmentation(model, backbone, preprocess, images[:4])


def test_sequence_to_sequence_addition_rnn():
    """Keras's "addition RNN" guide: '12+345' -> '357' as one-hot characters,
    an LSTM encoder, RepeatVector, an LSTM decoder and a TimeDistributed softmax."""
    chars = "0123456789+ "
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 100, 96), rng.integers(0, 100, 96)
    questions = [f"{p}+{q}".ljust(5) for p, q in zip(a, b)]
    answers = [str(p + q).ljust(3) for p, q in zip(a, b)]

    def one_hot(strings):
        index = np.array([[chars.index(c) for c in s] for s in strings])
        return np.eye(len(chars), dtype="float32")[index]

    x, y = one_hot(questions), one_hot(answers)

    def build(k):
        return k.Sequential([
            k.Input((5, len(chars))),
            k.layers.LSTM(16),
            k.layers.RepeatVector(3),
            k.layers.LSTM(16, return_sequences=True),
            k.layers.TimeDistributed(k.layers.Dense(len(chars), activation="softmax")),
        ])

    ours, theirs = fit_both(build, x, y, lambda is_loopax: {
        "optimizer": (loopax if is_loopax else keras).optimizers.Adam(0.01),
        "loss": "categorical_crossentropy"}, epochs=5)
    assert ours[-1] < 0.9 * ours[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)


class Sampling(loopax.layers.Layer):
    """z = mean + exp(log_var / 2) * eps, eps ~ N(0, 1) from the layer's own seed."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = loopax.random.SeedGenerator(7)

    def call(self, inputs):
        mean, log_var = inputs
        eps = loopax.random.normal(loopax.ops.shape(mean), seed=self.seed_generator)
        return mean + loopax.ops.exp(0.5 * log_var) * eps


def vae_parts():
    k = loopax
    inputs = k.Input((8, 8, 1))
    h = k.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(inputs)
    h = k.layers.Flatten()(h)
    mean, log_var = k.layers.Dense(2)(h), k.layers.Dense(2)(h)
    z = Sampling()([mean, log_var])
    encoder = k.Model(inputs, [mean, log_var, z])
    latent = k.Input((2,))
    h = k.layers.Dense(4 * 4 * 8, activation="relu")(latent)
    h = k.layers.Reshape((4, 4, 8))(h)
    h = k.layers.Conv2DTranspose(8, 3, strides=2, padding="same", activation="relu")(h)
    decoder = k.Model(latent, k.layers.Conv2DTranspose(1, 3, padding="same",
                                                       activation="sigmoid")(h))
    return encoder, decoder


def vae_losses(encoder, decoder, data, training=True):
    mean, log_var, z = encoder(data, training=training)
    reconstruction = decoder(z, training=training)
    rec = loopax.ops.mean(loopax.ops.sum(
        loopax.losses.binary_crossentropy(data, reconstruction), axis=(1, 2)))
    kl = -0.5 * (1 + log_var - loopax.ops.square(mean) - loopax.ops.exp(log_var))
    kl = loopax.ops.mean(loopax.ops.sum(kl, axis=1))
    return rec, kl


class TapeVAE(loopax.Model):
    """The Keras VAE example's model: a TF-style train_step with a GradientTape."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.encoder, self.decoder = vae_parts()
        self.total = loopax.metrics.Mean(name="loss")
        self.kl_tracker = loopax.metrics.Mean(name="kl_loss")

    @property
    def metrics(self):
        return [self.total, self.kl_tracker]

    def train_step(self, data):
        with loopax.GradientTape() as tape:
            rec, kl = vae_losses(self.encoder, self.decoder, data)
            loss = rec + kl
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.total.update_state(loss)
        self.kl_tracker.update_state(kl)
        return {m.name: m.result() for m in self.metrics}


class StatelessVAE(TapeVAE):
    """The same step written statelessly (Keras 3's JAX style)."""

    def train_step(self, state, data):
        trainable, non_trainable, optimizer_values, metric_values = state

        def loss_fn(trainable):
            mapping = list(zip(self.trainable_variables, trainable)) + \
                list(zip(self.non_trainable_variables, non_trainable))
            with loopax.StatelessScope(state_mapping=mapping) as scope:
                rec, kl = vae_losses(self.encoder, self.decoder, data)
            non = [scope.get_current_value(v) for v in self.non_trainable_variables]
            return rec + kl, (kl, non)

        (loss, (kl, non_trainable)), grads = jax.value_and_grad(
            loss_fn, has_aux=True)(trainable)
        trainable, optimizer_values = self.optimizer.stateless_apply(
            optimizer_values, grads, trainable)
        total_values = self.total.stateless_update_state(metric_values[:2], loss)
        kl_values = self.kl_tracker.stateless_update_state(metric_values[2:], kl)
        logs = {"loss": self.total.stateless_result(total_values),
                "kl_loss": self.kl_tracker.stateless_result(kl_values)}
        return logs, (trainable, non_trainable, optimizer_values, total_values + kl_values)


def test_convolutional_vae_with_conv2d_transpose_and_a_custom_train_step():
    rng = np.random.default_rng(4)
    images = np.zeros((64, 8, 8, 1), "float32")
    for i, (r, c) in enumerate(rng.integers(0, 5, (64, 2))):
        images[i, r:r + 4, c:c + 4] = 1.0   # a bright 4x4 square somewhere
    histories = []
    for cls in (TapeVAE, StatelessVAE):
        loopax.utils.set_random_seed(0)
        model = cls()
        model.compile(optimizer=loopax.optimizers.Adam(0.01))
        history = model.fit(images, batch_size=16, epochs=6, shuffle=False, verbose=0)
        histories.append(history.history)
    tape, stateless = histories
    assert tape["loss"][-1] < 0.8 * tape["loss"][0]
    # The TF-style step and the stateless one are the same computation.
    np.testing.assert_allclose(tape["loss"], stateless["loss"], rtol=1e-5)
    np.testing.assert_allclose(tape["kl_loss"], stateless["kl_loss"], rtol=1e-5)
