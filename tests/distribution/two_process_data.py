"""Data and model shared by the two-process run and its one-device reference."""

import numpy as np

import loopax as keras


def make_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 12)).astype("float32")
    y = (x[:, :3] @ rng.normal(size=(3, 4))).astype("float32")
    return x, y


def make_model():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((12,)),
                              keras.layers.Dense(16, activation="relu", name="hidden"),
                              keras.layers.Dense(4, name="out")])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    return model
