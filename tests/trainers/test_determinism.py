"""Same seed → same training run: weights, shuffling and dropout masks."""

import numpy as np

import loopax


def train_once(seed):
    loopax.utils.set_random_seed(seed)
    model = loopax.Sequential([
        loopax.Input(shape=(6,)),
        loopax.layers.Dense(8, activation="relu"),
        loopax.layers.Dropout(0.3),
        loopax.layers.Dense(1),
    ])
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)  # the data is fixed; only the seed varies
    x = rng.normal(size=(64, 6)).astype("float32")
    y = rng.normal(size=(64, 1)).astype("float32")
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=True, verbose=0)
    return model.get_weights(), history.history["loss"]


def test_same_seed_same_run_other_seed_other_run():
    w1, l1 = train_once(7)
    w2, l2 = train_once(7)
    w3, l3 = train_once(8)
    for a, b in zip(w1, w2):
        np.testing.assert_array_equal(a, b)
    assert l1 == l2
    assert any(not np.array_equal(a, b) for a, b in zip(w1, w3))
