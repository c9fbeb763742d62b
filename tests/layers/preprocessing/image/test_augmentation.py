"""Augmentation layers inside fit(): active in training steps only, seeded
(same seed -> same trained weights), and stateless-call friendly."""

import numpy as np

import loopax as keras


def _train(augment, seed=0):
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((6, 6, 1))]
    if augment:
        layers += [keras.layers.RandomTranslation(0.3, 0.3, seed=1),
                   keras.layers.RandomRotation(0.1, seed=2)]
    model = keras.Sequential(layers + [keras.layers.Flatten(), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
    x = np.random.default_rng(0).random((16, 6, 6, 1)).astype("float32")
    y = np.random.default_rng(1).random((16, 2)).astype("float32")
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    return model, x, history


def test_augmentation_runs_in_fit_seeded_and_not_at_inference():
    plain, x, _ = _train(augment=False)
    augmented, _, history = _train(augment=True)
    again, _, _ = _train(augment=True)
    assert np.all(np.isfinite(history.history["loss"]))
    # Same start (same seed, same Dense init), different training data seen.
    assert not np.allclose(plain.get_weights()[0], augmented.get_weights()[0])
    for a, b in zip(augmented.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
    # predict() runs in inference mode: the augmentation layers are the identity.
    dense = augmented.layers[-1]
    kernel, bias = dense.get_weights()
    np.testing.assert_allclose(augmented.predict(x, verbose=0),
                               x.reshape(16, -1) @ kernel + bias, rtol=1e-5, atol=1e-5)
