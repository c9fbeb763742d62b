"""CategoricalFocalCrossentropy, CategoricalGeneralizedCrossEntropy, Dice,
Tversky and Circle (classes and functions) against Keras 3: random inputs,
options, sample weights, reductions, masks from Circle's zero losses, a
jitted compiled fit; config round trips; bad inputs."""



import jax
import numpy as np
import pytest

import loopax
from loopax import losses, metrics

keras = pytest.importorskip("keras")
rng = np.random.default_rng(0)

B, C = 6, 4
ONE_HOT = np.eye(C, dtype="float32")[rng.integers(0, C, size=B)]
PROBS = rng.dirichlet(np.ones(C), size=B).astype("float32")
LOGITS = rng.normal(size=(B, C)).astype("float32")
LABELS = rng.integers(0, C, size=B)
MASKS = rng.integers(0, 2, size=(B, 5, 5, 1)).astype("float32")
MASK_PROBS = rng.uniform(size=(B, 5, 5, 1)).astype("float32")
EMB = rng.normal(size=(B, 8)).astype("float32")
EMB /= np.linalg.norm(EMB, axis=1, keepdims=True)
EMB_LABELS = np.array([0, 1, 0, 2, 1, 0])
W = rng.uniform(0, 2, size=B).astype("float32")

# (class name, kwargs, y_true, y_pred)
CASES = [
    ("CategoricalFocalCrossentropy", {}, ONE_HOT, PROBS),
    ("CategoricalFocalCrossentropy", {"alpha": 0.5, "gamma": 1.0, "from_logits": True,
                                      "label_smoothing": 0.1}, ONE_HOT, LOGITS),
    ("CategoricalGeneralizedCrossEntropy", {}, LABELS, PROBS),
    ("CategoricalGeneralizedCrossEntropy", {"q": 0.2}, LABELS, PROBS),
    ("Dice", {}, MASKS, MASK_PROBS),
    ("Dice", {"axis": (1, 2, 3)}, MASKS, MASK_PROBS),
    ("Tversky", {}, MASKS, MASK_PROBS),
    ("Tversky", {"alpha": 0.3, "beta": 0.7, "axis": (1, 2)}, MASKS, MASK_PROBS),
    ("Circle", {}, EMB_LABELS, EMB),
    ("Circle", {"gamma": 10.0, "margin": 0.2, "remove_diagonal": False}, EMB_LABELS, EMB),
]
IDS = [f"{name}-{i}" for i, (name, *_rest) in enumerate(CASES)]


@pytest.mark.parametrize("name,kwargs,y,p", CASES, ids=IDS)
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "none"])
def test_class_matches_keras(name, kwargs, y, p, reduction):
    ours = getattr(losses, name)(reduction=reduction, **kwargs)
    theirs = getattr(keras.losses, name)(reduction=reduction, **kwargs)
    for weight in (None, W):
        np.testing.assert_allclose(ours(y, p, sample_weight=weight),
                                   theirs(y, p, sample_weight=weight), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name,kwargs,y,p", CASES, ids=IDS)
def test_function_matches_keras(name, kwargs, y, p):
    fn = {"CategoricalFocalCrossentropy": "categorical_focal_crossentropy",
          "CategoricalGeneralizedCrossEntropy": "categorical_generalized_cross_entropy"
          }.get(name, name.lower())
    if name == "CategoricalGeneralizedCrossEntropy":
        kwargs = {"q": 0.5, **kwargs}
    np.testing.assert_allclose(getattr(losses, fn)(y, p, **kwargs),
                               getattr(keras.losses, fn)(y, p, **kwargs), rtol=2e-5, atol=1e-6)


def test_metric_function_and_gradient_match_keras():
    np.testing.assert_allclose(metrics.categorical_focal_crossentropy(ONE_HOT, PROBS),
                               keras.metrics.categorical_focal_crossentropy(ONE_HOT, PROBS),
                               rtol=1e-5)
    for name in ("Dice", "Circle"):
        y, p = (MASKS, MASK_PROBS) if name == "Dice" else (EMB_LABELS, EMB)
        # Compiled, as in training: eager grad dispatched (and compiled) op by op, ~1 s.
        ours = jax.jit(jax.grad(lambda x, n=name: getattr(losses, n)()(y, x)))(p)
        theirs = jax.jit(jax.grad(lambda x, n=name: getattr(keras.losses, n)()(y, x)))(p)
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


def test_circle_counts_only_samples_with_a_loss():
    # A sample alone in its class, far from all others, has loss 0 and is
    # left out of the mean, as in Keras.
    emb = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]], "float32")
    labels = np.array([0, 0, 1])
    values = losses.circle(labels, emb, gamma=1.0)
    ours = losses.Circle(gamma=1.0)(labels, emb)
    np.testing.assert_allclose(ours, keras.losses.Circle(gamma=1.0)(labels, emb), rtol=1e-5)
    positive = np.asarray(values) > 0
    np.testing.assert_allclose(ours, np.asarray(values)[positive].mean(), rtol=1e-5)


@pytest.mark.parametrize("name,kwargs", [
    ("CategoricalFocalCrossentropy", {"alpha": 0.4, "gamma": 3.0, "from_logits": True,
                                      "label_smoothing": 0.2, "axis": -1}),
    ("CategoricalGeneralizedCrossEntropy", {"q": 0.3}),
    ("Dice", {"axis": [1, 2]}),
    ("Tversky", {"alpha": 0.2, "beta": 0.8, "axis": None}),
    ("Circle", {"gamma": 40.0, "margin": 0.3, "remove_diagonal": False}),
], ids=["CategoricalFocalCrossentropy", "CategoricalGeneralizedCrossEntropy", "Dice", "Tversky",
        "Circle"])
def test_config_round_trip_equals_keras_config(name, kwargs):
    loss = getattr(losses, name)(name="l", **kwargs)
    config = loss.get_config()
    assert config.pop("dtype") == "float32"    # loopax's losses also record their dtype
    assert config == getattr(keras.losses, name)(name="l", **kwargs).get_config()
    clone = losses.deserialize(losses.serialize(loss))
    assert type(clone) is type(loss) and clone.get_config() == loss.get_config()
    assert type(losses.get(name)) is type(loss)


def test_names_resolve_like_keras():
    for fn in ("categorical_focal_crossentropy", "dice", "tversky", "circle"):
        assert losses.get(fn) is getattr(losses, fn)
        assert callable(keras.losses.get(fn))
    # Keras's `get` does not list the generalized crossentropy; loopax's
    # registry has it, so that serialize/deserialize round-trip.
    assert losses.get("categorical_generalized_cross_entropy") is \
        losses.categorical_generalized_cross_entropy


@pytest.mark.parametrize("loss,y_kind", [
    ("categorical_focal_crossentropy", "one_hot"),
    (losses.CategoricalGeneralizedCrossEntropy(q=0.7), "sparse"),
    ("dice", "one_hot"),
    (losses.Tversky(alpha=0.7, beta=0.3), "one_hot"),
], ids=["focal", "generalized", "dice", "tversky"])
def test_trains_under_compiled_fit_and_logs_the_loss(loss, y_kind):
    x = rng.normal(size=(32, 5)).astype("float32")
    classes = rng.integers(0, 3, size=32)
    y = np.eye(3, dtype="float32")[classes] if y_kind == "one_hot" else classes
    model = loopax.Sequential([loopax.Input((5,)), loopax.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=loopax.optimizers.SGD(0.0), loss=loss, jit_compile=True)
    logged = model.fit(x, y, batch_size=32, epochs=1, verbose=0).history["loss"][0]
    pred = np.asarray(model.predict(x, verbose=0))
    keras_loss = keras.losses.get(loss) if isinstance(loss, str) else \
        getattr(keras.losses, type(loss).__name__).from_config(loss.get_config())
    expected = np.mean(keras_loss(y, pred)) if isinstance(loss, str) else keras_loss(y, pred)
    np.testing.assert_allclose(logged, expected, rtol=1e-5)


def test_circle_trains_embeddings_under_fit():
    x = rng.normal(size=(24, 6)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    model = loopax.Sequential([loopax.Input((6,)), loopax.layers.Dense(4),
                               loopax.layers.UnitNormalization()])
    model.compile(optimizer="adam", loss=losses.Circle(gamma=10.0))
    history = model.fit(x, y, batch_size=24, epochs=5, verbose=0).history["loss"]
    assert np.all(np.isfinite(history)) and history[-1] < history[0]


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"`q` must be in \(0, 1\)"):
        losses.CategoricalGeneralizedCrossEntropy(q=1.0)
    with pytest.raises(ValueError, match="expected integer class ids of shape"):
        losses.categorical_generalized_cross_entropy(ONE_HOT, PROBS, q=0.5)
    with pytest.raises(ValueError, match="categorical_focal_crossentropy: y_true has shape"):
        losses.categorical_focal_crossentropy(LABELS, PROBS)
    with pytest.raises(ValueError, match="`axis` must be an int"):
        losses.categorical_focal_crossentropy(ONE_HOT, PROBS, axis=True)
    with pytest.raises(ValueError, match="dice: y_true has shape"):
        losses.dice(MASKS[:, :2], MASK_PROBS)
    with pytest.raises(ValueError, match=r"circle: expected embeddings y_pred of shape \(batch"):
        losses.circle(EMB_LABELS[:3], EMB)
