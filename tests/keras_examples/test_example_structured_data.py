"""Structured data as in keras.io's structured-data examples: the whole feature
dict (with columns the model does not use, such as a row id) passed to fit,
evaluate and predict; Keras ignores the extra keys with a warning, and so
does loopax. A model with dict Inputs, and one with a list of named Inputs
fed by the dict; compared with Keras."""

import warnings

import numpy as np
from twins import assert_same_results, falls, run_twins


def features(rng, n=48):
    age = rng.uniform(20, 70, n).astype("float32")
    chol = rng.uniform(150, 300, n).astype("float32")
    thal = rng.integers(0, 3, n)
    target = ((age > 45) & (chol > 200) | (thal == 2)).astype("float32")
    return {"age": age[:, None], "chol": chol[:, None],
            "thal": np.eye(3, dtype="float32")[thal],
            # Columns the models do not use, named to sort after the used ones: with an
            # unused "comment" key Keras 3.15.1's fit fails (its Dense receives 7
            # columns instead of 5); loopax matches the keys by name either way.
            "zip_code": np.arange(n, dtype="float32")[:, None],
            "weekday": np.zeros((n, 5), "float32")}, target[:, None]


def dict_inputs_script(keras, same_weights):
    data, target = features(np.random.default_rng(0))
    inputs = {"age": keras.Input((1,), name="age"), "chol": keras.Input((1,), name="chol"),
              "thal": keras.Input((3,), name="thal")}
    age = keras.layers.Rescaling(1 / 50.0)(inputs["age"])
    chol = keras.layers.Rescaling(1 / 250.0)(inputs["chol"])
    all_features = keras.layers.concatenate([age, chol, inputs["thal"]])
    x = keras.layers.Dense(8, activation="relu")(all_features)
    model = same_weights(keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x)))
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="binary_crossentropy",
                  metrics=["accuracy"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # both warn about zip_code and weekday
        history = model.fit(data, target, batch_size=16, epochs=4, shuffle=False, verbose=0)
        sample = {key: value[:4] for key, value in data.items()}
        return {"history": history.history,
                "evaluate": model.evaluate(data, target, verbose=0),
                "predictions": model.predict(sample, verbose=0)}


def list_inputs_script(keras, same_weights):
    data, target = features(np.random.default_rng(1))
    age, chol = keras.Input((1,), name="age"), keras.Input((1,), name="chol")
    thal = keras.Input((3,), name="thal")
    x = keras.layers.concatenate([keras.layers.Normalization(mean=45.0, variance=200.0)(age),
                                  keras.layers.Normalization(mean=225.0, variance=1900.0)(chol),
                                  thal])
    x = keras.layers.Dense(6, activation="tanh")(x)
    model = same_weights(keras.Model([age, chol, thal],
                                     keras.layers.Dense(1, activation="sigmoid")(x)))
    model.compile(optimizer="rmsprop", loss="binary_crossentropy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        history = model.fit(data, target, batch_size=12, epochs=4, shuffle=False, verbose=0,
                            validation_data=(data, target))
        return {"history": history.history,
                "called": model({key: value[:3] for key, value in data.items()})}


def test_feature_dict_with_unused_columns_into_dict_inputs_matches_keras():
    ours, theirs = run_twins(dict_inputs_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])


def test_feature_dict_with_unused_columns_into_named_list_inputs_matches_keras():
    ours, theirs = run_twins(list_inputs_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
