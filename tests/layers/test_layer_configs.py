"""get_config / from_config round trips for every layer: same config, and
with the same weights the re-created layer computes the same outputs."""

import numpy as np
import pytest

from loopax import constraints, initializers, layers, regularizers

rng = np.random.default_rng(6)
x2 = rng.standard_normal((2, 4)).astype("float32")
x3 = rng.standard_normal((2, 4, 3)).astype("float32")
x4 = rng.standard_normal((2, 4, 4, 3)).astype("float32")
ids = np.array([[1, 0, 3]])

CASES = [
    (lambda: layers.Dense(3, activation="gelu", use_bias=False,
                          kernel_initializer=initializers.RandomNormal(stddev=0.3, seed=2),
                          kernel_regularizer=regularizers.L1L2(0.1, 0.2),
                          activity_regularizer="l2",
                          kernel_constraint=constraints.MaxNorm(1.5)), x2),
    (lambda: layers.Activation("softplus"), x2),
    (lambda: layers.Dropout(0.3, noise_shape=(None, 1), seed=4), x2),
    (lambda: layers.Flatten(data_format="channels_first"), x3),
    (lambda: layers.Reshape((3, -1)), x3),
    (lambda: layers.Embedding(5, 2, embeddings_regularizer="l1", mask_zero=True), ids),
    (lambda: layers.ActivityRegularization(l1=0.3), x2),
    (lambda: layers.Identity(), x2),
    (lambda: layers.Conv1D(2, 2, padding="causal", dilation_rate=2, activation="relu"), x3),
    (lambda: layers.Conv2D(2, (2, 3), strides=(1, 2), padding="same",
                           bias_initializer="ones"), x4),
    (lambda: layers.MaxPooling1D(2, strides=1, padding="same"), x3),
    (lambda: layers.AveragePooling2D((2, 1)), x4),
    (lambda: layers.GlobalMaxPooling2D(keepdims=True), x4),
    (lambda: layers.GlobalAveragePooling1D(), x3),
    (lambda: layers.BatchNormalization(axis=1, momentum=0.9, epsilon=0.01, center=False,
                                       gamma_regularizer="l2"), x3),
    (lambda: layers.LayerNormalization(axis=[1, 2], rms_scaling=True), x3),
    (lambda: layers.Concatenate(axis=1), [x3, x3]),
    (lambda: layers.Subtract(), [x2, x2 * 2]),
    (lambda: layers.Conv2DTranspose(2, 3, strides=2, output_padding=1, padding="same"), x4),
    (lambda: layers.SeparableConv2D(2, 2, depth_multiplier=2, pointwise_regularizer="l2"), x4),
    (lambda: layers.DepthwiseConv1D(2, dilation_rate=2, use_bias=False), x3),
    (lambda: layers.UpSampling2D(2, interpolation="bilinear"), x4),
    (lambda: layers.ZeroPadding2D(((1, 0), (2, 1))), x4),
    (lambda: layers.Cropping1D((1, 2)), x3),
    (lambda: layers.Permute((2, 1)), x3),
    (lambda: layers.PReLU(shared_axes=[1]), x3),
    (lambda: layers.ReLU(max_value=1.5, negative_slope=0.1), x2),
    (lambda: layers.Softmax(axis=(1, 2)), x3),
    (lambda: layers.GroupNormalization(groups=3, center=False), x3),
    (lambda: layers.RMSNormalization(axis=[1, 2]), x3),
    (lambda: layers.SpatialDropout2D(0.3, data_format="channels_first", seed=1), x4),
    (lambda: layers.AlphaDropout(0.2, noise_shape=(None, 1)), x2),
    (lambda: layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 9.0]), x3),
    (lambda: layers.Resizing(3, 5, interpolation="bicubic", crop_to_aspect_ratio=True), x4),
    (lambda: layers.RandomCrop(2, 3), x4),
]


@pytest.mark.parametrize("make, x", CASES, ids=[type(make()).__name__ for make, _ in CASES])
def test_config_round_trip(make, x):
    layer = make()
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    out = layer(x)
    if layer.weights:
        clone.build([np.shape(e) for e in x] if isinstance(x, list) else np.shape(x))
        clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(x), out, rtol=1e-6, atol=1e-6)


def test_multi_head_attention_config_round_trip():
    layer = layers.MultiHeadAttention(2, 3, value_dim=4, output_shape=5, use_bias=False)
    clone = layers.MultiHeadAttention.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    out = layer(x3, x3)
    clone(x3, x3)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(x3, x3), out, rtol=1e-6, atol=1e-6)
