"""A GAN with its own train_step (Keras 3's stateless JAX form) and two
optimizers, one per network, routed by a MultiOptimizer; compared with Keras.

Both networks step together on each batch (the discriminator's gradients of
its loss, the generator's of its own, at the same point). The latent vectors
are drawn on the host, one per real image, and reach train_step as data.
"""

import jax
import numpy as np
from twins import assert_same_results, run_twins

LATENT = 4


def squares(rng, n):
    """(n, 8, 8, 1) images: a bright 3x3 square at a random place."""
    images = np.zeros((n, 8, 8, 1), "float32")
    for i, (r, c) in enumerate(rng.integers(0, 6, (n, 2))):
        images[i, r:r + 3, c:c + 3] = 1.0
    return images


def gan_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops
    rng = np.random.default_rng(0)
    real_images = squares(rng, 64)
    noise = rng.standard_normal((64, LATENT)).astype("float32")

    discriminator = keras.Sequential([
        keras.Input((8, 8, 1)),
        layers.Conv2D(8, 3, strides=2, padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Flatten(),
        layers.Dense(1),
    ], name="discriminator")
    generator = keras.Sequential([
        keras.Input((LATENT,)),
        layers.Dense(4 * 4 * 8),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Reshape((4, 4, 8)),
        layers.Conv2DTranspose(8, 4, strides=2, padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Conv2D(1, 3, padding="same", activation="sigmoid"),
    ], name="generator")

    class GAN(keras.Model):
        def __init__(self, discriminator, generator, **kwargs):
            super().__init__(**kwargs)
            self.discriminator = discriminator
            self.generator = generator
            self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
            self.g_loss_tracker = keras.metrics.Mean(name="g_loss")
            self.built = True  # both networks are built; the GAN has no call of its own

        @property
        def metrics(self):
            return [self.d_loss_tracker, self.g_loss_tracker]

        def compile(self, d_optimizer, g_optimizer, loss_fn):
            d_ids = {id(v) for v in self.discriminator.trainable_variables}
            super().compile(optimizer=keras.optimizers.MultiOptimizer(
                lambda v: d_optimizer if id(v) in d_ids else g_optimizer))
            self.loss_fn = loss_fn

        def gan_losses(self, trainable, non_trainable, real, z):
            mapping = list(zip(self.trainable_variables, trainable)) + \
                list(zip(self.non_trainable_variables, non_trainable))
            with keras.StatelessScope(state_mapping=mapping):
                fake = self.generator(z, training=True)
                real_logits = self.discriminator(real, training=True)
                fake_logits = self.discriminator(fake, training=True)
            d_loss = self.loss_fn(ops.ones_like(real_logits), real_logits) + \
                self.loss_fn(ops.zeros_like(fake_logits), fake_logits)
            g_loss = self.loss_fn(ops.ones_like(fake_logits), fake_logits)
            return d_loss, g_loss

        def train_step(self, state, data):
            trainable, non_trainable, optimizer_vars, metric_vars = state
            real, z = data["images"], data["noise"]
            d_loss, d_grads = jax.value_and_grad(
                lambda t: self.gan_losses(t, non_trainable, real, z)[0])(trainable)
            g_loss, g_grads = jax.value_and_grad(
                lambda t: self.gan_losses(t, non_trainable, real, z)[1])(trainable)
            d_ids = {id(v) for v in self.discriminator.trainable_variables}
            grads = [dg if id(v) in d_ids else gg
                     for v, dg, gg in zip(self.trainable_variables, d_grads, g_grads)]
            trainable, optimizer_vars = self.optimizer.stateless_apply(
                optimizer_vars, grads, trainable)
            d_vars = self.d_loss_tracker.stateless_update_state(metric_vars[:2], d_loss)
            g_vars = self.g_loss_tracker.stateless_update_state(metric_vars[2:], g_loss)
            logs = {"d_loss": self.d_loss_tracker.stateless_result(d_vars),
                    "g_loss": self.g_loss_tracker.stateless_result(g_vars)}
            return logs, (trainable, non_trainable, optimizer_vars, d_vars + g_vars)

    same_weights(discriminator)
    same_weights(generator)
    gan = GAN(discriminator, generator)
    gan.compile(d_optimizer=keras.optimizers.Adam(3e-3),
                g_optimizer=keras.optimizers.Adam(1e-2),
                loss_fn=keras.losses.BinaryCrossentropy(from_logits=True))
    history = gan.fit({"images": real_images, "noise": noise}, batch_size=16, epochs=3,
                      shuffle=False, verbose=0)
    samples = gan.generator.predict(noise[:4], verbose=0)
    return {"history": history.history, "samples": samples,
            "real_logits": discriminator.predict(real_images[:4], verbose=0),
            "steps_per_optimizer": [int(ops.convert_to_numpy(o.iterations))
                                    for o in gan.optimizer.optimizers]}


def test_gan_custom_train_step_two_optimizers_matches_keras():
    ours, theirs = run_twins(gan_script)
    assert_same_results(ours, theirs)
    # Each of the two optimizers took one step per batch (3 epochs of 4 batches).
    assert ours["steps_per_optimizer"] == [12, 12]
