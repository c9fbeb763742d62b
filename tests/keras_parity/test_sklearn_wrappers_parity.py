"""`loopax.wrappers` against Keras 3.15.1's `keras.wrappers`: the same compiled model
(same weights) fitted through each wrapper predicts the same labels/values/outputs,
and the wrappers work inside scikit-learn (pipelines, cross-validation). Skipped
without scikit-learn."""

import numpy as np
import pytest
from keras_reference import keras

import loopax

sklearn = pytest.importorskip("sklearn", reason="scikit-learn is not installed "
                                                 "(pip install 'loopax[sklearn]')")
from sklearn.model_selection import cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 5)).astype("float32")
LABELS = np.array(["cat", "dog", "eel"])[RNG.integers(0, 3, 40)]
TARGET = (X @ RNG.normal(size=5)).astype("float32")


def builder(lib, outputs, activation, loss, weights):
    """A model function for the wrappers that starts from `weights` (Keras's, copied)."""
    def build(X, y, hidden=8):
        model = lib.Sequential([lib.Input((X.shape[1],)),
                                lib.layers.Dense(hidden, activation="relu"),
                                lib.layers.Dense(outputs, activation=activation)])
        model.set_weights(weights)
        model.compile(optimizer=lib.optimizers.SGD(0.05), loss=loss)
        return model
    return build


def keras_weights(outputs):
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(outputs)])
    return model.get_weights()


@pytest.mark.parametrize("kind", ["classifier", "regressor", "transformer"])
def test_wrappers_fit_and_predict_as_keras(kind):
    outputs, activation, loss, y = {
        "classifier": (3, "softmax", "categorical_crossentropy", LABELS),
        "regressor": (1, None, "mse", TARGET),
        "transformer": (1, None, "mse", TARGET),
    }[kind]
    weights = keras_weights(outputs)
    name = f"SKLearn{kind.capitalize()}"
    results = {}
    for lib in (keras, loopax):
        estimator = getattr(lib.wrappers, name)(
            model=builder(lib, outputs, activation, loss, weights),
            model_kwargs={"hidden": 8}, fit_kwargs={"epochs": 3, "verbose": 0})
        estimator.fit(X, y, batch_size=8, shuffle=False)
        out = estimator.transform(X) if kind == "transformer" else estimator.predict(X)
        results[lib.__name__] = (out, estimator.history_.history["loss"])
    ours, theirs = results["loopax"], results["keras"]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4)
    if kind == "classifier":
        np.testing.assert_array_equal(ours[0], theirs[0])
        assert ours[0].dtype.kind == "U"
    else:
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5)
        assert ours[0].shape == theirs[0].shape


def test_classifier_learns_classes_and_scores_in_sklearn():
    weights = keras_weights(3)
    clf = loopax.wrappers.SKLearnClassifier(
        model=builder(loopax, 3, "softmax", "categorical_crossentropy", weights),
        fit_kwargs={"epochs": 2, "verbose": 0})
    pipeline = make_pipeline(StandardScaler(), clf).fit(X, LABELS)
    assert list(pipeline[-1].classes_) == ["cat", "dog", "eel"]
    assert set(pipeline.predict(X)) <= set(LABELS)
    scores = cross_val_score(clf, X, LABELS, cv=2)
    assert scores.shape == (2,) and np.all((0 <= scores) & (scores <= 1))


def test_a_compiled_model_instance_is_cloned_not_reused():
    model = loopax.Sequential([loopax.Input((5,)), loopax.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    before = [w.copy() for w in model.get_weights()]
    reg = loopax.wrappers.SKLearnRegressor(model=model, fit_kwargs={"epochs": 1, "verbose": 0})
    reg.fit(X, TARGET)
    assert reg.model_ is not model and reg.epoch_ == 1
    for a, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("lib_name", ["keras", "loopax"])
def test_bad_targets_and_models_are_refused_as_keras(lib_name):
    lib = {"keras": keras, "loopax": loopax}[lib_name]
    weights = keras_weights(3)
    clf = lib.wrappers.SKLearnClassifier(
        model=builder(lib, 3, "softmax", "categorical_crossentropy", weights))
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(X, np.array(["cat"] * 40))
    with pytest.raises(ValueError, match="binary and multiclass"):
        clf.fit(X, TARGET)

    def uncompiled(X, y):
        return lib.Sequential([lib.Input((5,)), lib.layers.Dense(1)])
    with pytest.raises(RuntimeError, match="compiled"):
        lib.wrappers.SKLearnRegressor(model=uncompiled).fit(X, TARGET)
