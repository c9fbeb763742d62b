"""A Vision Transformer as in keras.io's image_classification_with_vision_
transformer, shrunk: a Patches layer on `ops.image.extract_patches`, a
PatchEncoder adding learned position embeddings (`ops.arange`), pre-norm
Transformer blocks with MultiHeadAttention and a GELU MLP, AdamW; compared
with Keras. Dropout rates are 0 (the two libraries draw masks differently)."""

import numpy as np
from twins import assert_same_results, falls, run_twins

IMAGE, PATCH, CLASSES = 8, 4, 3


def bars(rng, n):
    """(n, 8, 8, 3) images with a bright bar that is horizontal, vertical or
    diagonal (the class)."""
    labels = rng.integers(0, CLASSES, n)
    images = rng.random((n, IMAGE, IMAGE, 3)).astype("float32") * 0.3
    for i, label in enumerate(labels):
        k = rng.integers(0, IMAGE)
        if label == 0:
            images[i, k, :] += 0.7
        elif label == 1:
            images[i, :, k] += 0.7
        else:
            images[i, np.arange(IMAGE), np.arange(IMAGE)] += 0.7
    return images, labels


def vit_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops
    images, labels = bars(np.random.default_rng(6), 48)
    num_patches, projection_dim, num_heads = (IMAGE // PATCH) ** 2, 8, 2

    def mlp(x, hidden_units, dropout_rate):
        for units in hidden_units:
            x = layers.Dense(units, activation=keras.activations.gelu)(x)
            x = layers.Dropout(dropout_rate)(x)
        return x

    class Patches(layers.Layer):
        def __init__(self, patch_size):
            super().__init__()
            self.patch_size = patch_size

        def call(self, images):
            input_shape = ops.shape(images)
            batch_size = input_shape[0]
            patches = keras.ops.image.extract_patches(images, size=self.patch_size)
            patches = ops.reshape(patches, (batch_size, num_patches,
                                            self.patch_size * self.patch_size * 3))
            return patches

    class PatchEncoder(layers.Layer):
        def __init__(self, num_patches, projection_dim):
            super().__init__()
            self.num_patches = num_patches
            self.projection = layers.Dense(units=projection_dim)
            self.position_embedding = layers.Embedding(input_dim=num_patches,
                                                       output_dim=projection_dim)

        def call(self, patch):
            positions = ops.expand_dims(ops.arange(start=0, stop=self.num_patches, step=1),
                                        axis=0)
            projected_patches = self.projection(patch)
            return projected_patches + self.position_embedding(positions)

    inputs = keras.Input(shape=(IMAGE, IMAGE, 3))
    patches = Patches(PATCH)(inputs)
    encoded_patches = PatchEncoder(num_patches, projection_dim)(patches)
    for _ in range(1):
        x1 = layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
        attention_output = layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=projection_dim, dropout=0.0)(x1, x1)
        x2 = layers.Add()([attention_output, encoded_patches])
        x3 = layers.LayerNormalization(epsilon=1e-6)(x2)
        x3 = mlp(x3, hidden_units=[projection_dim * 2, projection_dim], dropout_rate=0.0)
        encoded_patches = layers.Add()([x3, x2])
    representation = layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
    representation = layers.Flatten()(representation)
    features = mlp(representation, hidden_units=[16], dropout_rate=0.0)
    logits = layers.Dense(CLASSES)(features)
    model = same_weights(keras.Model(inputs=inputs, outputs=logits))

    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate=3e-3, weight_decay=1e-4),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
                 keras.metrics.SparseTopKCategoricalAccuracy(2, name="top-2-accuracy")])
    history = model.fit(images, labels, batch_size=16, epochs=3, shuffle=False, verbose=0)
    return {"history": history.history, "logits": model.predict(images[:4], verbose=0),
            "patches": Patches(PATCH)(images[:1])}


def test_vision_transformer_with_extract_patches_matches_keras():
    ours, theirs = run_twins(vit_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
