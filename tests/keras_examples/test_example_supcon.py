"""Supervised contrastive learning as in keras.io's supervised-contrastive-
learning example, shrunk: an encoder with an adapted Normalization layer, a
projection head trained with a Loss subclass that overrides `__call__`
(`keras.utils.normalize`, a temperature-scaled similarity matrix, the n-pairs
crossentropy), then a classifier on the frozen encoder; compared with Keras."""

import numpy as np
from test_example_vit import bars
from twins import assert_same_results, falls, run_twins


def supcon_script(keras, same_weights):
    layers = keras.layers
    images, labels = bars(np.random.default_rng(10), 48)
    input_shape = images.shape[1:]

    data_augmentation = keras.Sequential([layers.Normalization()])
    data_augmentation.layers[0].adapt(images)

    def create_encoder():
        inputs = keras.Input(shape=input_shape)
        augmented = data_augmentation(inputs)
        x = layers.Conv2D(8, 3, activation="relu")(augmented)
        outputs = layers.GlobalAveragePooling2D()(x)
        return keras.Model(inputs=inputs, outputs=outputs, name="encoder")

    class SupervisedContrastiveLoss(keras.losses.Loss):
        def __init__(self, temperature=1, name=None):
            super().__init__(name=name)
            self.temperature = temperature

        def __call__(self, labels, feature_vectors, sample_weight=None):
            feature_vectors_normalized = keras.utils.normalize(feature_vectors, axis=1, order=2)
            logits = keras.ops.divide(
                keras.ops.matmul(feature_vectors_normalized,
                                 keras.ops.transpose(feature_vectors_normalized)),
                self.temperature)
            return npairs_loss(keras.ops.squeeze(labels), logits)

    def npairs_loss(y_true, y_pred):
        y_true = keras.ops.expand_dims(y_true, -1)
        y_true = keras.ops.cast(keras.ops.equal(y_true, keras.ops.transpose(y_true)),
                                y_pred.dtype)
        y_true /= keras.ops.sum(y_true, 1, keepdims=True)
        loss = keras.ops.categorical_crossentropy(y_true, y_pred, from_logits=True)
        return keras.ops.mean(loss)

    encoder = same_weights(create_encoder())
    inputs = keras.Input(shape=input_shape)
    projection = same_weights(keras.Sequential([keras.Input((8,)),
                                                layers.Dense(8, activation="relu")]))
    encoder_with_projection_head = keras.Model(inputs, projection(encoder(inputs)))
    encoder_with_projection_head.compile(optimizer=keras.optimizers.Adam(0.01),
                                         loss=SupervisedContrastiveLoss(0.5))
    pretraining = encoder_with_projection_head.fit(images, labels, batch_size=16, epochs=3,
                                                   shuffle=False, verbose=0)

    for layer in encoder.layers:
        layer.trainable = False
    head = same_weights(keras.Sequential([keras.Input((8,)), layers.Dense(8, activation="relu"),
                                          layers.Dense(3, activation="softmax")]))
    classifier = keras.Model(inputs, head(encoder(inputs)), name="classifier")
    classifier.compile(optimizer=keras.optimizers.Adam(0.01),
                       loss=keras.losses.SparseCategoricalCrossentropy(),
                       metrics=[keras.metrics.SparseCategoricalAccuracy()])
    history = classifier.fit(images, labels, batch_size=16, epochs=3, shuffle=False,
                             verbose=0)
    return {"pretraining": pretraining.history, "classifier": history.history,
            "trainable_count": len(classifier.trainable_weights),
            "probabilities": classifier.predict(images[:4], verbose=0)}


def test_supervised_contrastive_learning_matches_keras():
    ours, theirs = run_twins(supcon_script)
    assert_same_results(ours, theirs)
    assert falls(ours["pretraining"]) and falls(ours["classifier"])
    assert ours["trainable_count"] == 4  # the frozen encoder's weights are not trained
