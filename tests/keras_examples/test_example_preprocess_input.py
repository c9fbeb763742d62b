"""An application family's preprocess_input on the model's Input, inside the
functional model, as keras.io's DeepLabV3+ segmentation example calls
`keras.applications.resnet50.preprocess_input(model_input)`: a small
segmentation network after ResNet's caffe preprocessing, and a classifier
after MobileNetV2's and DenseNet's (tf and torch modes) preprocessing; each
trained and compared with Keras."""

import numpy as np
from twins import assert_same_results, falls, run_twins


def images(rng, n=16, size=8):
    """RGB images in [0, 255] with a bright square; its mask and whether it is
    in the top half."""
    x = rng.uniform(0, 80, (n, size, size, 3)).astype("float32")
    masks = np.zeros((n, size, size, 1), "float32")
    top = rng.random(n) < 0.5
    for i in range(n):
        r = rng.integers(0, size // 2 - 2) if top[i] else rng.integers(size // 2, size - 2)
        c = rng.integers(0, size - 3)
        x[i, r:r + 3, c:c + 3] = 230.0
        masks[i, r:r + 3, c:c + 3] = 1.0
    return x, masks, top.astype("float32")[:, None]


def segmentation_script(keras, same_weights):
    layers = keras.layers
    x, masks, _ = images(np.random.default_rng(0))
    model_input = keras.Input(shape=(8, 8, 3))
    preprocessed = keras.applications.resnet50.preprocess_input(model_input)
    h = layers.Conv2D(8, 3, padding="same", activation="relu")(preprocessed)
    h = layers.Rescaling(0.01)(h)
    pooled = layers.AveragePooling2D(pool_size=(2, 2))(h)
    up = layers.UpSampling2D(size=(2, 2), interpolation="bilinear")(pooled)
    h = layers.Concatenate(axis=-1)([h, up])
    model_output = layers.Conv2D(1, kernel_size=(1, 1), padding="same",
                                 activation="sigmoid")(h)
    model = same_weights(keras.Model(inputs=model_input, outputs=model_output))
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy")
    history = model.fit(x, masks, batch_size=4, epochs=3, shuffle=False, verbose=0)
    return {"history": history.history,
            "predictions": model.predict(x[:2], verbose=0)[..., 0]}


def classifier_script(keras, same_weights):
    layers = keras.layers
    x, _, top = images(np.random.default_rng(1))
    inputs = keras.Input(shape=(8, 8, 3))
    tf_mode = keras.applications.mobilenet_v2.preprocess_input(inputs)
    torch_mode = keras.applications.densenet.preprocess_input(inputs)
    h = layers.Concatenate()([tf_mode, torch_mode])
    h = layers.DepthwiseConv2D(3, padding="same")(h)
    h = layers.Conv2D(4, 1, activation="relu")(h)
    h = layers.Flatten()(h)
    outputs = layers.Dense(1, activation="sigmoid")(h)
    model = same_weights(keras.Model(inputs, outputs))
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x, top, batch_size=4, epochs=3, shuffle=False, verbose=0)
    return {"history": history.history,
            "evaluate": model.evaluate(x, top, verbose=0),
            "preprocessed": keras.Model(inputs, tf_mode).predict(x[:1], verbose=0)[0, 0]}


def test_resnet_preprocess_input_inside_a_segmentation_model_matches_keras():
    ours, theirs = run_twins(segmentation_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])


def test_mobilenet_and_densenet_preprocess_input_inside_a_classifier_matches_keras():
    ours, theirs = run_twins(classifier_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
