"""MLP-Mixer as in keras.io's mlp_image_classification, shrunk: patches from
`ops.image.extract_patches`, a Dense patch embedding, Mixer blocks mixing
across patches (`ops.transpose`) and across channels with
LayerNormalization and GELU, GlobalAveragePooling1D; compared with Keras."""

import numpy as np
from test_example_vit import bars
from twins import assert_same_results, falls, run_twins

IMAGE, PATCH, CLASSES = 8, 2, 3


def mlp_mixer_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops
    images, labels = bars(np.random.default_rng(7), 48)
    num_patches, embedding_dim = (IMAGE // PATCH) ** 2, 8

    class Patches(layers.Layer):
        def __init__(self, patch_size, **kwargs):
            super().__init__(**kwargs)
            self.patch_size = patch_size

        def call(self, x):
            patches = keras.ops.image.extract_patches(x, self.patch_size)
            batch_size = keras.ops.shape(patches)[0]
            num_patches = keras.ops.shape(patches)[1] * keras.ops.shape(patches)[2]
            patch_dim = keras.ops.shape(patches)[3]
            return keras.ops.reshape(patches, (batch_size, num_patches, patch_dim))

    class MLPMixerLayer(layers.Layer):
        def __init__(self, num_patches, hidden_units, dropout_rate, **kwargs):
            super().__init__(**kwargs)
            self.mlp1 = keras.Sequential([
                layers.Dense(units=num_patches, activation="gelu"),
                layers.Dense(units=num_patches),
                layers.Dropout(rate=dropout_rate),
            ])
            self.mlp2 = keras.Sequential([
                layers.Dense(units=num_patches, activation="gelu"),
                layers.Dense(units=hidden_units),
                layers.Dropout(rate=dropout_rate),
            ])
            self.normalize = layers.LayerNormalization(epsilon=1e-6)

        def call(self, inputs):
            x = self.normalize(inputs)
            x_channels = ops.transpose(x, axes=(0, 2, 1))
            mlp1_outputs = self.mlp1(x_channels)
            mlp1_outputs = ops.transpose(mlp1_outputs, axes=(0, 2, 1))
            x = mlp1_outputs + inputs
            x_patches = self.normalize(x)
            mlp2_outputs = self.mlp2(x_patches)
            return x + mlp2_outputs

    inputs = keras.Input(shape=(IMAGE, IMAGE, 3))
    patches = Patches(PATCH)(inputs)
    x = layers.Dense(units=embedding_dim)(patches)
    x = keras.Sequential([MLPMixerLayer(num_patches, embedding_dim, 0.0) for _ in range(1)])(x)
    representation = layers.GlobalAveragePooling1D()(x)
    logits = layers.Dense(CLASSES)(representation)
    model = same_weights(keras.Model(inputs=inputs, outputs=logits))

    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate=3e-3, weight_decay=1e-4),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")])
    reduce_lr = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1)
    history = model.fit(images, labels, batch_size=16, epochs=3, shuffle=False, verbose=0,
                        callbacks=[reduce_lr])
    return {"history": history.history, "logits": model.predict(images[:4], verbose=0)}


def test_mlp_mixer_with_extract_patches_matches_keras():
    ours, theirs = run_twins(mlp_mixer_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
