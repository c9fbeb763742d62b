"""A Siamese network with a contrastive loss, as in keras.io's "image
similarity with a contrastive loss": one shared tower applied to two inputs,
a Lambda euclidean distance, BatchNormalization, a loss made by a closure;
compared with Keras."""

import numpy as np
from twins import assert_same_results, falls, run_twins


def pairs(rng, n):
    """Pairs of (8, 8, 1) images of digits-like bars (a class is the bar's row)
    and labels 1 for pairs of the same class, 0 otherwise."""
    classes = rng.integers(0, 4, (n, 2))
    classes[: n // 2, 1] = classes[: n // 2, 0]  # half the pairs: same class
    images = rng.random((n, 2, 8, 8, 1)).astype("float32") * 0.3
    for i, (a, b) in enumerate(classes):
        images[i, 0, 2 * a:2 * a + 2] += 0.7
        images[i, 1, 2 * b:2 * b + 2] += 0.7
    return images[:, 0], images[:, 1], (classes[:, 0] == classes[:, 1]).astype("float32")


def siamese_script(keras, same_weights):
    layers, ops = keras.layers, keras.ops
    x1, x2, labels = pairs(np.random.default_rng(1), 64)

    def euclidean_distance(vects):
        x, y = vects
        sum_square = ops.sum(ops.square(x - y), axis=1, keepdims=True)
        return ops.sqrt(ops.maximum(sum_square, keras.backend.epsilon()))

    def loss(margin=1):
        def contrastive_loss(y_true, y_pred):
            square_pred = ops.square(y_pred)
            margin_square = ops.square(ops.maximum(margin - y_pred, 0))
            return ops.mean((1 - y_true) * square_pred + y_true * margin_square)
        return contrastive_loss

    tower_input = keras.Input((8, 8, 1))
    h = layers.BatchNormalization()(tower_input)
    h = layers.Conv2D(4, 3, activation="tanh")(h)
    h = layers.AveragePooling2D(pool_size=(2, 2))(h)
    h = layers.Flatten()(h)
    h = layers.BatchNormalization()(h)
    tower = keras.Model(tower_input, layers.Dense(8, activation="tanh")(h))

    input_1, input_2 = keras.Input((8, 8, 1)), keras.Input((8, 8, 1))
    merge = layers.Lambda(euclidean_distance, output_shape=(1,))([tower(input_1),
                                                                   tower(input_2)])
    normal = layers.BatchNormalization()(merge)
    output = layers.Dense(1, activation="sigmoid")(normal)
    siamese = same_weights(keras.Model(inputs=[input_1, input_2], outputs=output))
    # Labels as keras.io has them: 1 for a different pair, 0 for the same one.
    siamese.compile(loss=loss(margin=1), optimizer="RMSprop", metrics=["accuracy"])
    history = siamese.fit([x1, x2], 1 - labels, batch_size=16, epochs=3, shuffle=False,
                          verbose=0)
    return {"history": history.history,
            "evaluate": siamese.evaluate([x1, x2], 1 - labels, verbose=0),
            "predictions": siamese.predict([x1[:6], x2[:6]], verbose=0)}


def test_siamese_contrastive_loss_matches_keras():
    ours, theirs = run_twins(siamese_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
