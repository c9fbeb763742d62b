"""Transposed convolution on CPU: one Conv2DTranspose layer and the GAN step of the
tf.keras "customizing fit" guide.

Layer: 14x14x128 -> Conv2DTranspose(128, 4, strides=2, padding="same") -> 28x28x128,
no bias, batch 64; jitted forward, input gradient and kernel gradient of
sum(y * c), each the best of 5 warm runs. loopax (`ops.conv_transpose`) against
Keras 3 on JAX (`keras.ops.conv_transpose`, lax's form) and TensorFlow when
importable (`tf.keras.layers.Conv2DTranspose` under `tf.function`).

GAN: the guide's generator (Dense 7*7*128, two Conv2DTranspose(128, 4, s2) and a
Conv2D(1, 7)) and discriminator (two strided Conv2D, global max pooling, Dense 1),
one discriminator and one generator update per step as a TF-style train_step
(GradientTape under loopax.function), Adam(3e-4); seconds per step, best of 3.
Run it against another checkout with PYTHONPATH to compare before/after.

    python bench/conv_transpose.py [--batch 64] [--gan-batch 16] [--skip-layer]
"""

import argparse
import os
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax
import jax.numpy as jnp
import numpy as np

import loopax

LATENT = 128


def best_of(fn, *args, runs=5):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return min(times)


def layer_times(conv_transpose, x, kernel, cotangent):
    """(forward, input gradient, kernel gradient) seconds of one jitted function each."""
    def loss(x, kernel):
        return jnp.sum(jnp.asarray(conv_transpose(x, kernel, 2, "same")) * cotangent)
    forward = jax.jit(lambda x, k: conv_transpose(x, k, 2, "same"))
    return (best_of(forward, x, kernel), best_of(jax.jit(jax.grad(loss, 0)), x, kernel),
            best_of(jax.jit(jax.grad(loss, 1)), x, kernel))


def tensorflow_times(x, kernel, cotangent):
    import tensorflow as tf
    layer = tf.keras.layers.Conv2DTranspose(128, 4, strides=2, padding="same", use_bias=False)
    x, cotangent = tf.constant(np.asarray(x)), tf.constant(np.asarray(cotangent))
    layer(x)

    @tf.function
    def gradient(x, wrt_input):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(layer(x) * cotangent)
        return tape.gradient(loss, x if wrt_input else layer.kernel)

    def best(fn, *args):
        fn(*args).numpy()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            fn(*args).numpy()
            times.append(time.perf_counter() - start)
        return min(times)
    return (best(tf.function(layer), x), best(gradient, x, True), best(gradient, x, False))


def bench_layer(batch):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((batch, 14, 14, 128)), jnp.float32)
    kernel = jnp.asarray(rng.standard_normal((4, 4, 128, 128)) * 0.05, jnp.float32)
    cotangent = jnp.asarray(rng.standard_normal((batch, 28, 28, 128)), jnp.float32)
    rows = [("loopax", layer_times(loopax.ops.conv_transpose, x, kernel, cotangent))]
    import keras
    rows.append((f"Keras {keras.__version__} (JAX)",
                 layer_times(keras.ops.conv_transpose, x, kernel, cotangent)))
    try:
        rows.append(("TensorFlow", tensorflow_times(x, kernel, cotangent)))
    except ImportError:
        print("(TensorFlow not importable: its row is left out)")
    print(f"Conv2DTranspose 14->28, 128->128, 4x4, stride 2, batch {batch} (seconds)")
    print(f"{'':24s} {'forward':>9s} {'d/input':>9s} {'d/kernel':>9s}")
    for name, (fwd, dx, dk) in rows:
        print(f"{name:24s} {fwd:9.3f} {dx:9.3f} {dk:9.3f}")


def gan_models():
    layers = loopax.layers
    discriminator = loopax.Sequential([
        layers.Input((28, 28, 1)),
        layers.Conv2D(64, 3, strides=2, padding="same"), layers.LeakyReLU(0.2),
        layers.Conv2D(128, 3, strides=2, padding="same"), layers.LeakyReLU(0.2),
        layers.GlobalMaxPooling2D(), layers.Dense(1)])
    generator = loopax.Sequential([
        layers.Input((LATENT,)),
        layers.Dense(7 * 7 * 128), layers.LeakyReLU(0.2), layers.Reshape((7, 7, 128)),
        layers.Conv2DTranspose(128, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
        layers.Conv2DTranspose(128, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
        layers.Conv2D(1, 7, padding="same", activation="sigmoid")])
    return discriminator, generator


def bench_gan(batch):
    discriminator, generator = gan_models()
    d_optimizer = loopax.optimizers.Adam(3e-4)
    g_optimizer = loopax.optimizers.Adam(3e-4)
    loss_fn = loopax.losses.BinaryCrossentropy(from_logits=True)
    ones, zeros = np.ones((batch, 1), np.float32), np.zeros((batch, 1), np.float32)

    @loopax.function
    def train_step(real, z_fake, z_gen):
        fake = generator(z_fake)
        with loopax.GradientTape() as tape:
            predictions = discriminator(loopax.ops.concatenate([fake, real]))
            d_loss = loss_fn(np.concatenate([ones, zeros]), predictions)
        grads = tape.gradient(d_loss, discriminator.trainable_weights)
        d_optimizer.apply_gradients(zip(grads, discriminator.trainable_weights))
        with loopax.GradientTape() as tape:
            g_loss = loss_fn(zeros, discriminator(generator(z_gen)))
        grads = tape.gradient(g_loss, generator.trainable_weights)
        g_optimizer.apply_gradients(zip(grads, generator.trainable_weights))
        return d_loss, g_loss

    rng = np.random.default_rng(0)
    real = rng.random((batch, 28, 28, 1), dtype=np.float32)
    z = rng.standard_normal((2, batch, LATENT)).astype(np.float32)
    seconds = best_of(train_step, real, z[0], z[1], runs=3)
    print(f"GAN train_step (customizing fit guide), batch {batch}: {seconds:.3f} s/step")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--gan-batch", type=int, default=16)
    parser.add_argument("--skip-layer", action="store_true")
    parser.add_argument("--skip-gan", action="store_true")
    args = parser.parse_args()
    print(f"loopax from {os.path.dirname(loopax.__file__)}, jax {jax.__version__}, "
          f"backend {jax.default_backend()}")
    if not args.skip_layer:
        bench_layer(args.batch)
    if not args.skip_gan:
        bench_gan(args.gan_batch)


if __name__ == "__main__":
    main()
